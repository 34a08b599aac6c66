// Progressive enhancement: answer without a full page load. The feedback page the
// server returns replaces the page body in place (header included, so its forms point
// at the new address) and its verdict takes focus, so a screen reader announces it.
// Without JavaScript the same form posts and the answer's response is the feedback page.
// A page that answered a POST names its own address (link rel=canonical): the address bar
// and the history show that one, so a reload or Back fetches the page, not the POST again.
(function () {
  "use strict";

  function ownAddress(doc) {
    var link = doc.querySelector("link[rel=canonical]");
    return link ? new URL(link.getAttribute("href"), window.location.href).href : null;
  }

  function swapMain(html, url) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    url = ownAddress(doc) || url;
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
              // A refused answer is an error page, which names no address: show it and
              // keep the address.
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
  document.addEventListener("DOMContentLoaded", function () {
    var address = ownAddress(document);
    if (address && address !== window.location.href) {
      window.history.replaceState(window.history.state, "", address);
    }
    bind(document);
  });
})();
