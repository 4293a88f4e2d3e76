// The document-pair page: sentence ids behind a toggle, the run selector submits itself,
// and keyboard navigation through the alignment rows (j/k, Enter, r). No inline script (CSP).
(function () {
  "use strict";
  var toggle = document.querySelector(".js-toggle-sids");
  var KEY = "pair.showSids";
  function applySids(show) { document.body.classList.toggle("hide-sids", !show); if (toggle) toggle.checked = show; }
  if (toggle) {
    applySids(window.localStorage && localStorage.getItem(KEY) === "1");
    toggle.addEventListener("change", function () {
      applySids(toggle.checked);
      try { localStorage.setItem(KEY, toggle.checked ? "1" : "0"); } catch (e) { /* private mode */ }
    });
  }
  var rows = Array.prototype.slice.call(document.querySelectorAll(".pa-row"));
  var current = -1;
  function mark(on) {
    var row = rows[current];
    if (!row) return;
    row.classList.toggle("current", on);
    [row.dataset.complex, row.dataset.simple].forEach(function (id) {
      var el = document.getElementById(id);
      if (el) el.classList.toggle("hot", on);
    });
  }
  function go(index) {
    if (!rows.length) return;
    mark(false);
    current = Math.max(0, Math.min(rows.length - 1, index));
    mark(true);
    rows[current].focus();
    rows[current].scrollIntoView({ block: "nearest" });
  }
  rows.forEach(function (row, i) { row.addEventListener("click", function () { go(i); }); });
  function typing(t) {  // keys typed into a field are the field's (a checkbox or button is not typing)
    if (!t || !t.tagName) return false;
    if (t.tagName === "INPUT") return !/^(checkbox|radio|button|submit|reset)$/.test(t.type);
    return t.tagName === "SELECT" || t.tagName === "TEXTAREA" || t.isContentEditable;
  }
  document.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey || typing(e.target)) return;
    if (e.key === "j" || e.key === "ArrowDown" && current >= 0) { e.preventDefault(); go(current + 1); }
    else if (e.key === "k" || e.key === "ArrowUp" && current >= 0) { e.preventDefault(); go(current - 1); }
    else if (e.key === "Enter" && current >= 0) {
      var el = document.getElementById(rows[current].dataset.complex);
      if (el) { e.preventDefault(); el.scrollIntoView({ block: "center" }); }
    } else if (e.key === "r") {
      var select = document.getElementById("pa-run");
      if (select) { e.preventDefault(); select.focus(); }
    }
  });
})();
