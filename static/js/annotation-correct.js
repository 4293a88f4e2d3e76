// Paragraph-alignment editor: links drawn as SVG lines between the two columns.
// Click a paragraph, then paragraphs on the other side to link/unlink; keyboard as on the page.
(function () {
  "use strict";
  const grid = document.getElementById("cx");
  if (!grid) return;
  const svg = document.getElementById("cx-svg");
  const readonly = grid.dataset.readonly === "1";
  const initial = JSON.parse(grid.dataset.links || "[]");
  const scores = new Map(initial.map((l) => [l.c + "-" + l.s, l.score]));
  const links = new Set(initial.map((l) => l.c + "-" + l.s));
  const saved = new Set(links);
  const paras = { c: [...grid.querySelectorAll('.cx-para[data-side="c"]')], s: [...grid.querySelectorAll('.cx-para[data-side="s"]')] };
  let anchor = null;                 // {side, pos}: the selected paragraph
  let cursor = { side: "c", pos: 0 };  // keyboard position
  const NS = "http://www.w3.org/2000/svg";

  const key = (c, s) => c + "-" + s;
  const other = (side) => (side === "c" ? "s" : "c");

  function toggle(a, b) {
    const c = a.side === "c" ? a.pos : b.pos, s = a.side === "s" ? a.pos : b.pos;
    const k = key(c, s);
    if (links.has(k)) links.delete(k); else links.add(k);
    render();
  }

  function partners(side, pos) {
    const out = [];
    links.forEach((k) => { const [c, s] = k.split("-").map(Number); if (side === "c" && c === pos) out.push(s); if (side === "s" && s === pos) out.push(c); });
    return out;
  }

  function render() {
    const box = grid.getBoundingClientRect();
    const svgBox = svg.getBoundingClientRect();
    svg.setAttribute("viewBox", `0 0 ${svgBox.width} ${box.height}`);
    svg.setAttribute("height", box.height);
    svg.innerHTML = "";
    const focus = anchor || cursor;
    const hot = new Set(partners(focus.side, focus.pos).map((p) => focus.side === "c" ? key(focus.pos, p) : key(p, focus.pos)));
    [...links].sort().forEach((k) => {
      const [c, s] = k.split("-").map(Number);
      const pc = paras.c[c], ps = paras.s[s];
      if (!pc || !ps) return;
      const rc = pc.getBoundingClientRect(), rs = ps.getBoundingClientRect();
      const y1 = rc.top + Math.min(rc.height / 2, 28) - svgBox.top, y2 = rs.top + Math.min(rs.height / 2, 28) - svgBox.top;
      const w = svgBox.width;
      const path = document.createElementNS(NS, "path");
      path.setAttribute("d", `M0,${y1} C${w / 2},${y1} ${w / 2},${y2} ${w},${y2}`);
      path.setAttribute("class", "cx-line" + (hot.has(k) ? " hot" : "") + (saved.has(k) ? "" : " new"));
      svg.appendChild(path);
      const sc = scores.get(k);
      if (sc !== undefined && sc !== null) {
        const t = document.createElementNS(NS, "text");
        t.setAttribute("x", w / 2); t.setAttribute("y", (y1 + y2) / 2 - 3);
        t.setAttribute("class", "cx-score"); t.textContent = Number(sc).toFixed(2);
        svg.appendChild(t);
      }
    });
    ["c", "s"].forEach((side) => paras[side].forEach((el, pos) => {
      el.classList.toggle("anchor", !!anchor && anchor.side === side && anchor.pos === pos);
      el.classList.toggle("cursor", cursor.side === side && cursor.pos === pos);
      el.classList.toggle("linked", partners(side, pos).length > 0);
      el.classList.toggle("partner", focus.side !== side && partners(focus.side, focus.pos).includes(pos));
    }));
    const list = document.getElementById("cx-list");
    list.innerHTML = "";
    [...links].map((k) => k.split("-").map(Number)).sort((a, b) => a[0] - b[0] || a[1] - b[1]).forEach(([c, s]) => {
      const li = document.createElement("li");
      const sc = scores.get(key(c, s));
      li.innerHTML = `¶${c} ↔ ¶${s} <span class="muted">${sc !== undefined && sc !== null ? Number(sc).toFixed(2) : "new"}</span>`;
      if (!readonly) {
        const b = document.createElement("button"); b.type = "button"; b.className = "cx-x"; b.textContent = "remove";
        b.addEventListener("click", () => { links.delete(key(c, s)); render(); });
        li.appendChild(b);
      }
      list.appendChild(li);
    });
    document.getElementById("cx-count").textContent = links.size;
    const value = [...links].sort().join(",");
    document.getElementById("cx-links").value = value;
    const dirty = value !== [...saved].sort().join(",");
    document.getElementById("cx-dirty").hidden = !dirty;
  }

  function select(side, pos) {
    cursor = { side, pos };
    if (readonly) { anchor = { side, pos }; render(); return; }
    if (anchor && anchor.side !== side) toggle(anchor, cursor);
    else { anchor = anchor && anchor.side === side && anchor.pos === pos ? null : { side, pos }; render(); }
  }

  ["c", "s"].forEach((side) => paras[side].forEach((el, pos) => {
    el.addEventListener("click", (ev) => { if (!window.getSelection().toString()) select(side, pos); });
  }));

  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.target.matches("input, textarea, select")) return;
    const n = paras[cursor.side].length;
    let handled = true;
    switch (ev.key) {
      case "ArrowDown": case "j": cursor.pos = Math.min(n - 1, cursor.pos + 1); break;
      case "ArrowUp": case "k": cursor.pos = Math.max(0, cursor.pos - 1); break;
      case "ArrowLeft": case "h": case "ArrowRight": case "l": {
        const side = ev.key === "ArrowLeft" || ev.key === "h" ? "c" : "s";
        if (side !== cursor.side) {
          const p = partners(cursor.side, cursor.pos);
          cursor = { side, pos: p.length ? Math.min(...p) : Math.min(cursor.pos, paras[side].length - 1) };
        }
        break;
      }
      case " ":
        if (!readonly) { if (anchor && anchor.side !== cursor.side) toggle(anchor, cursor); else anchor = { ...cursor }; }
        break;
      case "Enter": anchor = { ...cursor }; break;
      case "Escape": anchor = null; break;
      case "s": case "S": if (!readonly) { submit("save"); } break;
      case "n": case "N": if (!readonly) { submit("next"); } break;
      default: handled = false;
    }
    if (handled) {
      ev.preventDefault(); render();
      const el = paras[cursor.side][cursor.pos];
      if (el) el.scrollIntoView({ block: "nearest" });
    }
  });

  let submitting = false;
  function submit(action) {
    const form = document.getElementById("cx-form");
    const input = document.createElement("input");
    input.type = "hidden"; input.name = "action"; input.value = action; form.appendChild(input);
    submitting = true; form.submit();
  }
  document.getElementById("cx-form").addEventListener("submit", () => { submitting = true; });
  window.addEventListener("beforeunload", (ev) => {
    if (!submitting && !document.getElementById("cx-dirty").hidden) { ev.preventDefault(); ev.returnValue = ""; }
  });
  window.addEventListener("resize", render);
  render();
})();
