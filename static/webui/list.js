// /list without full reloads: every action form posts with fetch and the server answers with the re-rendered
// list (#todo-app), which replaces the old one. Without JavaScript the same forms post and redirect back.
(function () {
  "use strict";

  function app() {
    return document.getElementById("todo-app");
  }

  document.addEventListener("submit", async function (event) {
    var form = event.target;
    var current = app();
    if (!current || !form.matches("form[data-inplace]") || !current.contains(form)) return;
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
      return;
    }
    event.preventDefault();
    var wasAdd = form.classList.contains("add-form");
    current.setAttribute("aria-busy", "true");
    try {
      var response = await fetch(form.action, {
        method: "POST",
        body: new FormData(form),
        headers: { "X-Requested-With": "fetch" },
        credentials: "same-origin",
      });
      if (response.headers.get("X-Partial") !== "todo-app") throw new Error("not a list fragment");
      var holder = document.createElement("div");
      holder.innerHTML = await response.text();
      var fresh = holder.querySelector("#todo-app");
      current.replaceWith(fresh);
      if (wasAdd) {
        var details = fresh.querySelector("details.add");
        details.open = true;
        fresh.querySelector("#add-name").focus();
      }
    } catch (error) {
      // Anything unexpected (a login page, a network error): fall back to the plain form post.
      form.submit();
    }
  });
})();
