// Behaviour that used to be inline (the Content-Security-Policy forbids inline scripts and
// style attributes): bar widths, grid columns, confirmations and auto-submitting selects.
// Runs on page load and on every piece of content htmx swaps in.
(function () {
  "use strict";
  function apply(root) {
    root.querySelectorAll("[data-width]").forEach(function (el) {
      var value = parseFloat(el.getAttribute("data-width"));
      el.style.width = (isFinite(value) ? Math.max(0, Math.min(100, value)) : 0) + "%";
    });
    root.querySelectorAll("[data-cols]").forEach(function (el) {
      el.style.setProperty("--cols", el.getAttribute("data-cols"));
    });
  }
  document.addEventListener("submit", function (event) {
    var form = event.target.closest && event.target.closest("form[data-confirm]");
    if (form && !window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
  }, true);
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("select[data-autosubmit]")) event.target.form.submit();
  });
  // flash messages can be dismissed; success and info messages fade after their data-expire seconds
  function dismiss(li) {
    li.classList.add("gone");
    window.setTimeout(function () { if (li.parentNode) li.parentNode.removeChild(li); }, 300);
  }
  function messages() {
    document.querySelectorAll(".messages .msg").forEach(function (li) {
      var button = li.querySelector(".msg-close");
      if (button) { button.hidden = false; button.addEventListener("click", function () { dismiss(li); }); }
      var seconds = Number(li.dataset.expire || 0);
      if (seconds > 0) window.setTimeout(function () { dismiss(li); }, seconds * 1000);
    });
  }
  document.addEventListener("DOMContentLoaded", function () { apply(document); messages(); });
  document.addEventListener("htmx:load", function (event) { apply(event.detail.elt.parentNode || event.detail.elt); });
})();
