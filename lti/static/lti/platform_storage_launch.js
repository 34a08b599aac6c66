// Read this login's secret back from the platform's storage and finish the launch.
(function () {
  "use strict";
  var storage = JSON.parse(document.getElementById("lti-storage").textContent);
  var form = document.getElementById("lti-storage-form");
  ltiPlatformStorage.get(storage, function (value) {
    form.elements.lti_storage_value.value = value || "";
    form.submit();
  });
})();
