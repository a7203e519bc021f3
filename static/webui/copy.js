// "Copy id" buttons: shown only when the clipboard can be used (without JavaScript the id stays selectable text).
(function () {
  "use strict";
  if (!navigator.clipboard) return;
  document.querySelectorAll("button.copy-id").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", async function () {
      try {
        await navigator.clipboard.writeText(button.dataset.copy);
        button.textContent = "Copied";
      } catch (error) {
        button.textContent = "Copy failed";
      }
      setTimeout(function () { button.textContent = "Copy id"; }, 1500);
    });
  });
})();
