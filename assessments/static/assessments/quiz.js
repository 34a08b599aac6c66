// Progressive enhancement: answer without a full page load. The feedback page the
// server returns replaces the page body in place (header included, so its forms point
// at the new address) and its verdict takes focus, so a screen reader announces it.
// Without JavaScript the same form posts and redirects.
(function () {
  "use strict";

  function swapMain(html, url) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var incoming = doc.querySelector("main");
    if (!incoming) { window.location.assign(url || window.location.href); return; }
    document.body.replaceWith(doc.body);
    document.title = doc.title;
    if (url && url !== window.location.href) { window.history.pushState({}, "", url); }
    var target = incoming.querySelector("[data-feedback] [tabindex], [role=alert]") || incoming;
    target.focus();
    bind(incoming);
  }

  function bind(root) {
    root.querySelectorAll("form[data-enhance]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.fetch) { return; }
        event.preventDefault();
        var button = form.querySelector("button[type=submit]");
        if (button) { button.disabled = true; }
        fetch(form.action, { method: "POST", body: new FormData(form), credentials: "same-origin" })
          .then(function (response) {
            return response.text().then(function (html) {
              // A refused answer is an error page at the form's URL: show it, keep the address.
              swapMain(html, response.redirected ? response.url : null);
            });
          })
          .catch(function () { form.submit(); });
      });
    });
  }

  // "Go back" links go back in a script: the Content-Security-Policy forbids javascript: URLs.
  // Delegated from the document, so links in a swapped-in page work too.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a[data-history-back]");
    if (link && window.history.length > 1) { event.preventDefault(); window.history.back(); }
  });
  window.addEventListener("popstate", function () { window.location.reload(); });
  document.addEventListener("DOMContentLoaded", function () { bind(document); });
})();
