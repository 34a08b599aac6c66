// LTI Client Side postMessages (platform storage): lti.put_data / lti.get_data to the
// frame the platform named in lti_storage_target, answered by *.response messages.
// If the platform does not answer in time, the callback runs anyway (the cookie path
// may still work).
var ltiPlatformStorage = (function () {
  "use strict";

  function targetWindow(name) {
    if (name === "_parent") { return window.parent; }
    try { return window.parent.frames[name] || window.parent; } catch (e) { return window.parent; }
  }

  function ask(storage, message, done) {
    var messageId = Math.random().toString(36).slice(2);
    var finished = false;
    function finish(value) {
      if (finished) { return; }
      finished = true;
      window.removeEventListener("message", onMessage);
      done(value);
    }
    function onMessage(event) {
      var data = event.data || {};
      if (event.origin !== storage.origin || data.message_id !== messageId) { return; }
      if (data.subject !== message.subject + ".response") { return; }
      finish(data.error ? null : data.value);
    }
    window.addEventListener("message", onMessage);
    message.message_id = messageId;
    targetWindow(storage.target).postMessage(message, storage.origin);
    window.setTimeout(function () { finish(null); }, 3000);
  }

  return {
    put: function (storage, done) {
      ask(storage, { subject: "lti.put_data", key: storage.key, value: storage.value }, done);
    },
    get: function (storage, done) {
      ask(storage, { subject: "lti.get_data", key: storage.key }, done);
    }
  };
})();
