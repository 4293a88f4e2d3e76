// Labeling page: keys 1/2/3 answer, C shows context, the next question is preloaded.
// Plain fetch against the annotation API (session auth + CSRF header); no build step.
// Requests: the page once (it carries the second question, reserved with the first, in
// #lab-preload), then ONE request per question: the answer, with preload, reserves the question
// after the preloaded one and returns it ("next"), so the question shown after an answer is
// always already here. A "next" request is made only when no question is waiting.
(function () {
  "use strict";
  const lab = document.getElementById("lab");
  if (!lab) return;
  const $ = (id) => document.getElementById(id);
  const csrf = document.querySelector("input[name=csrfmiddlewaretoken]").value;
  const minSeconds = Number(lab.dataset.minSeconds || 0);
  const pageSize = Number(lab.dataset.pageSize || 5);
  let token = $("lab-token").value;
  let shownAt = Date.now();
  let queue = [];            // questions reserved for us, not shown yet (0 or 1; the answer refills it)
  let preloading = Promise.resolve();
  let preloadBusy = false;
  let busy = false;
  let explaining = false;
  let answered = Number($("lab-answered").textContent || 0);

  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf, "Accept": "application/json" },
      body: JSON.stringify(body),
    });
  }

  function notice(text, kind) {
    const el = $("lab-notice");
    el.textContent = text; el.className = "lab-notice " + (kind || ""); el.hidden = !text;
  }

  // the too-fast notice counts down with the timer and goes once the wait is over
  let waitUntil = 0;
  let waitText = "";
  function countdown() {
    if (!waitUntil) return;
    const left = Math.ceil((waitUntil - Date.now()) / 1000);
    if (left <= 0) { waitUntil = 0; notice("You can answer now.", "ok"); return; }
    notice(/in \d+ s/.test(waitText) ? waitText.replace(/in \d+ s/, "in " + left + " s") : waitText + " (" + left + " s)", "warn");
  }

  function tick() {
    countdown();
    const s = (Date.now() - shownAt) / 1000;
    $("lab-seconds").textContent = Math.floor(s);
    const ready = s >= minSeconds;
    $("lab-timer").classList.toggle("ready", ready);
    $("lab-timer-fill").style.width = (minSeconds ? Math.min(100, (100 * s) / minSeconds) : 100) + "%";
  }
  setInterval(tick, 250);

  function dots() {
    const pos = answered % pageSize;
    document.querySelectorAll("#lab-dots i").forEach((d, i) => d.classList.toggle("done", i < pos));
    $("lab-answered").textContent = answered;
  }

  function keep(q) {  // a reserved question to show later (never the one on screen, never twice)
    if (q && q.token !== token && !queue.some((x) => x.token === q.token)) queue.push(q);
  }

  function preload() {  // only when no answer brought the following question (first one, fallbacks)
    lab.dataset.ready = "0";
    preloadBusy = true;
    preloading = (async () => {
      try {
        const r = await post(lab.dataset.nextUrl, { exclude: [token] });
        if (r.status === 200) keep(await r.json());
      } catch (e) { /* the next question is fetched on demand */ }
      preloadBusy = false;
      lab.dataset.ready = "1";  // the next question is reserved (tests wait for this)
    })();
  }

  function show(q) {
    token = q.token;
    $("lab-token").value = q.token;
    $("lab-complex").textContent = q.complex;
    $("lab-simple").textContent = q.simple;
    const ctx = $("lab-context"); ctx.hidden = true; ctx.innerHTML = "";
    $("lab-context-btn").firstChild.textContent = "Show paragraphs ";
    shownAt = Date.now(); tick();
    $("lab-q").classList.remove("fade"); void $("lab-q").offsetWidth; $("lab-q").classList.add("fade");
    if (!queue.length) preload(); else lab.dataset.ready = "1";
  }

  async function advance() {
    let q = queue.shift();
    if (!q) {
      const r = await post(lab.dataset.nextUrl, { exclude: [token] });
      if (r.status === 403) { window.location.reload(); return; }
      if (r.status !== 200) { finish(); return; }
      q = await r.json();
    }
    show(q);
  }

  function finish() {
    $("lab-form").hidden = true; $("lab-done").hidden = false; notice("");
  }

  async function answer(label) {
    if (busy || explaining) return;
    busy = true;
    document.querySelectorAll(".lab-answer").forEach((b) => b.classList.toggle("chosen", b.value === label));
    try {
      await preloading;  // the preloaded question must be known to exclude it below
      lab.dataset.ready = "0";
      const ahead = queue.map((q) => q.token);
      const r = await post(lab.dataset.answerUrl, { token: token, label: label, preload: true, exclude: ahead });
      const data = await r.json().catch(() => ({}));
      if (r.status === 200) {
        waitUntil = 0;
        notice("");
        keep(data.next);
        if (!data.duplicate) answered = data.answered;
        if (data.accuracy !== null && data.accuracy !== undefined) $("lab-accuracy").textContent = Math.round(data.accuracy * 100) + " %";
        dots();
        if (data.removed) { window.location.reload(); return; }
        if (data.missed) { explain(data.feedback); return; }
        await advance();
      } else if (r.status === 429) {
        waitText = data.detail || "Too fast: please answer again in " + Math.ceil(data.wait_seconds || 3) + " s.";
        waitUntil = Date.now() + 1000 * Number(data.wait_seconds || 3);
        countdown();
      } else if (r.status === 410) {
        notice(data.detail || "This question expired.", "warn");
        queue = []; await advance();
      } else if (r.status === 409) {
        notice(data.detail || "This job does not take answers now.", "warn"); finish();
      } else if (r.status === 403) {
        window.location.reload();
      } else {
        notice(data.detail || "Could not save the answer; please try again.", "error");
      }
    } catch (e) {
      notice("Network problem: the answer was not saved; please try again.", "error");
    } finally {
      busy = false;
      if (!preloadBusy) lab.dataset.ready = "1";  // idle: nothing more is being reserved
      document.querySelectorAll(".lab-answer").forEach((b) => b.classList.remove("chosen"));
    }
  }

  const labels = { aligned: "aligned", partialAligned: "partially aligned", notAligned: "not aligned" };
  // at a page end: the page's missed test questions (never per answer: see docs/annotation-quality.md)
  function explain(feedback) {
    explaining = true;
    const list = $("lab-explain-list");
    list.innerHTML = "";
    feedback.forEach((f) => {
      const li = document.createElement("li");
      const pair = document.createElement("p"); pair.className = "lab-explain-pair";
      pair.textContent = "“" + f.simple + "” / “" + f.complex + "”";
      const verdict = document.createElement("p");
      const given = document.createElement("span"); given.className = "badge " + f.given; given.textContent = labels[f.given] || f.given;
      const expected = document.createElement("span"); expected.className = "badge " + f.expected; expected.textContent = labels[f.expected] || f.expected;
      verdict.append("You answered ", given, "; the expected answer is ", expected, ".");
      const why = document.createElement("p"); why.className = "lab-explain-text"; why.textContent = f.explanation;
      li.append(pair, verdict, why); list.append(li);
    });
    $("lab-explain").hidden = false; $("lab-form").classList.add("dim");
    $("lab-continue").focus();
  }
  async function endExplain() {
    explaining = false;
    $("lab-explain").hidden = true; $("lab-form").classList.remove("dim");
    await advance();
  }

  function toggleContext() {
    const ctx = $("lab-context");
    if (!ctx.hidden) { ctx.hidden = true; $("lab-context-btn").firstChild.textContent = "Show paragraphs "; return; }
    const url = lab.dataset.contextUrl.replace("TOKEN", encodeURIComponent(token));
    ctx.hidden = false; ctx.innerHTML = '<p class="muted">Loading…</p>';
    $("lab-context-btn").firstChild.textContent = "Hide paragraphs ";
    if (window.htmx) { window.htmx.ajax("GET", url, { target: "#lab-context", swap: "innerHTML" }); }
    else { fetch(url, { credentials: "same-origin" }).then((r) => r.text()).then((t) => { ctx.innerHTML = t; }); }
  }

  $("lab-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const label = ev.submitter ? ev.submitter.value : null;
    if (label) answer(label);
  });
  $("lab-context-btn").addEventListener("click", toggleContext);
  $("lab-continue").addEventListener("click", endExplain);
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target.matches("input[type=text], textarea")) return;
    if (explaining) {
      if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); endExplain(); }
      return;
    }
    const button = document.querySelector('.lab-answer[data-key="' + ev.key + '"]');
    if (button) { ev.preventDefault(); answer(button.value); return; }
    if (ev.key === "c" || ev.key === "C") { ev.preventDefault(); toggleContext(); }
    if (ev.key === "?") { window.open(document.querySelector(".lab-title a").href, "_blank"); }
  });
  const preloaded = JSON.parse(($("lab-preload") || {}).textContent || "null");
  tick();
  if (preloaded) { keep(preloaded); lab.dataset.ready = "1"; } else preload();
})();
