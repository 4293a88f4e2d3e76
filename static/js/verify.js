// Verification queue: 1/2/3 choose a label, Enter confirms, j/k and the arrow keys move.
// The page works without this file (radio buttons, a submit button, links).
(function () {
  "use strict";
  const form = document.getElementById("v-form");
  if (!form) return;
  const radios = Array.from(form.querySelectorAll('input[name="label"]'));
  const go = (id) => { const a = document.getElementById(id); if (a) window.location.href = a.href; };
  let sent = false;

  function choose(key) {
    const radio = radios.find((r) => r.dataset.key === key);
    if (!radio) return;
    radio.checked = true;
    radio.dispatchEvent(new Event("change", { bubbles: true }));
  }

  form.addEventListener("submit", (event) => {
    if (sent || !radios.some((r) => r.checked)) { event.preventDefault(); return; }
    sent = true;  // one save per key press, even if Enter repeats
    form.classList.add("v-saving");
  });

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const tag = (event.target && event.target.tagName) || "";
    if (tag === "TEXTAREA" || (tag === "INPUT" && event.target.type !== "radio")) return;
    switch (event.key) {
      case "1": case "2": case "3":
        choose(event.key); event.preventDefault(); break;
      case "Enter":
        event.preventDefault(); form.requestSubmit(); break;
      case "j": case "ArrowDown": case "ArrowRight":
        event.preventDefault(); go("v-next"); break;
      case "k": case "ArrowUp": case "ArrowLeft":
        event.preventDefault(); go("v-prev"); break;
      default:
    }
  });
})();
