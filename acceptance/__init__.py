"""The real-Moodle acceptance run (`make acceptance-moodle`, docs/acceptance-moodle.md).
Not part of the test suite: it needs a Moodle 5.1 source tree, PHP and nginx."""
