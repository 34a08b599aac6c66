// A launch's landing may name a one-time handoff (lti/handoff.py) in its address: take it
// out of the address bar and the history, so it is not kept, bookmarked or shared.
(function () {
  "use strict";
  var url = new URL(window.location.href);
  if (!url.searchParams.has("handoff")) { return; }
  url.searchParams.delete("handoff");
  window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
})();
