// Rating page of an evaluation study: one source, all its versions, every scale by keyboard.
// Keys: 1-5 choose on the focused scale and move on; Up/Down/Tab move between scales;
// Left/Right change the focused value (sliders: by 1, with Shift by 10); 0-9 jump a slider to
// 0-90; Enter submits when every scale has a value; ? opens the instructions.
// Plain fetch against the evaluation API (session auth + CSRF header); no build step.
(function () {
  "use strict";
  const ev = document.getElementById("ev");
  if (!ev) return;
  const $ = (id) => document.getElementById(id);
  const csrf = document.querySelector("input[name=csrfmiddlewaretoken]").value;
  const minSeconds = Number(ev.dataset.minSeconds || 0);
  const token = ev.dataset.token;
  const cells = Array.from(document.querySelectorAll(".ev-scale"));
  const shownAt = Date.now();
  let focus = 0;
  let busy = false;

  function notice(text, kind) {
    const el = $("lab-notice");
    el.textContent = text; el.className = "lab-notice " + (kind || ""); el.hidden = !text;
  }

  function tick() {
    const s = (Date.now() - shownAt) / 1000;
    $("lab-seconds").textContent = Math.floor(s);
    $("lab-timer").classList.toggle("ready", s >= minSeconds);
    $("lab-timer-fill").style.width = (minSeconds ? Math.min(100, (100 * s) / minSeconds) : 100) + "%";
  }
  setInterval(tick, 250);

  const isSlider = (cell) => cell.classList.contains("ev-slider");
  const radios = (cell) => Array.from(cell.querySelectorAll("input[type=radio]"));

  function valueOf(cell) {
    if (isSlider(cell)) {
      const input = cell.querySelector("input[type=range]");
      return cell.dataset.touched === "1" ? Number(input.value) : null;
    }
    const checked = cell.querySelector("input[type=radio]:checked");
    return checked ? Number(checked.value) : null;
  }

  function refresh() {
    cells.forEach((c, i) => {
      c.classList.toggle("focus", i === focus);
      c.classList.toggle("done", valueOf(c) !== null);
      if (isSlider(c)) c.querySelector(".ev-value").textContent = valueOf(c) === null ? "–" : valueOf(c);
    });
    document.querySelectorAll(".ev-version").forEach((v) => {
      v.classList.toggle("current", v.contains(cells[focus]));
      v.classList.toggle("complete", Array.from(v.querySelectorAll(".ev-scale")).every((c) => valueOf(c) !== null));
    });
    const missing = cells.filter((c) => valueOf(c) === null).length;
    $("ev-missing").textContent = missing ? missing + " to go" : "ready to submit";
    $("ev-submit").classList.toggle("ready", missing === 0);
  }

  function moveTo(i) {
    focus = Math.max(0, Math.min(cells.length - 1, i));
    refresh();
    const box = cells[focus].closest(".ev-version").getBoundingClientRect();
    if (box.top < 60 || box.bottom > window.innerHeight - 20) cells[focus].closest(".ev-version").scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  function setSlider(cell, value) {
    const input = cell.querySelector("input[type=range]");
    input.value = Math.max(Number(input.min), Math.min(Number(input.max), value));
    cell.dataset.touched = "1";
  }

  function choose(cell, index) {
    const rs = radios(cell);
    if (index < 0 || index >= rs.length) return false;
    rs[index].checked = true;
    return true;
  }

  function step(cell, delta) {
    if (isSlider(cell)) {
      const input = cell.querySelector("input[type=range]");
      setSlider(cell, (cell.dataset.touched === "1" ? Number(input.value) : 50) + delta);
      return;
    }
    const rs = radios(cell);
    const at = rs.findIndex((r) => r.checked);
    choose(cell, at < 0 ? (delta > 0 ? 0 : rs.length - 1) : Math.max(0, Math.min(rs.length - 1, at + Math.sign(delta))));
  }

  function collect() {
    const byPos = {};
    for (const c of cells) {
      const v = valueOf(c);
      if (v === null) return null;
      (byPos[c.dataset.pos] = byPos[c.dataset.pos] || {})[c.dataset.dim] = v;
    }
    return Object.keys(byPos).map((p) => ({ position: Number(p), values: byPos[p] }));
  }

  async function submit() {
    if (busy) return;
    const ratings = collect();
    if (!ratings) {
      const first = cells.findIndex((c) => valueOf(c) === null);
      notice("Every version needs a rating on every scale before the page can be submitted.", "warn");
      moveTo(first);
      return;
    }
    busy = true;
    try {
      const r = await fetch(ev.dataset.answerUrl, {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf, "Accept": "application/json" },
        body: JSON.stringify({ token: token, ratings: ratings }),
      });
      const data = await r.json().catch(() => ({}));
      if (r.status === 200) {
        $("ev-answered").textContent = data.answered;
        notice("Saved. Loading the next page…");
        window.location.assign(ev.dataset.rateUrl);
        return;
      }
      if (r.status === 429) notice(data.detail || "Too fast: please wait a few seconds.", "warn");
      else if (r.status === 410 || r.status === 403 || r.status === 409) { notice(data.detail || "This page expired.", "warn"); window.location.assign(ev.dataset.rateUrl); return; }
      else notice(data.detail || "Could not save the page; please try again.", "error");
    } catch (e) {
      notice("Network problem: the page was not saved; please try again.", "error");
    }
    busy = false;
  }

  cells.forEach((c, i) => {
    c.addEventListener("mousedown", () => { focus = i; refresh(); });
    c.addEventListener("input", () => { if (isSlider(c)) c.dataset.touched = "1"; focus = i; refresh(); });
    c.addEventListener("change", () => { focus = i; refresh(); });
  });
  $("ev-form").addEventListener("submit", (e) => { e.preventDefault(); submit(); });

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target.matches("input[type=text], textarea")) return;
    const cell = cells[focus];
    if (!cell) return;
    const slider = isSlider(cell);
    let handled = true;
    if (e.key === "Enter") submit();
    else if (e.key === "Tab") moveTo(focus + (e.shiftKey ? -1 : 1));
    else if (e.key === "ArrowDown") moveTo(focus + 1);
    else if (e.key === "ArrowUp") moveTo(focus - 1);
    else if (e.key === "ArrowRight") { step(cell, e.shiftKey ? 10 : 1); refresh(); }
    else if (e.key === "ArrowLeft") { step(cell, e.shiftKey ? -10 : -1); refresh(); }
    else if (e.key === "Home" && slider) { setSlider(cell, 0); refresh(); }
    else if (e.key === "End" && slider) { setSlider(cell, 100); refresh(); }
    else if (/^[0-9]$/.test(e.key) && slider) { setSlider(cell, Number(e.key) * 10); refresh(); }
    else if (/^[1-9]$/.test(e.key) && !slider) { if (choose(cell, Number(e.key) - 1)) moveTo(focus + 1); }
    else if (e.key === "?") window.open($("ev-help").href, "_blank");
    else handled = false;
    if (handled) e.preventDefault();
  });
  tick(); refresh();
  ev.dataset.ready = "1";
})();
