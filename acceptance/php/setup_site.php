<?php
// The acceptance site's people and course, after Moodle's CLI install (run by
// acceptance/setup_moodle.sh; PHP CLI, Moodle's own APIs and its testing data generator):
//   php setup_site.php --moodle=MOODLE_SRC --password=PASSWORD --out=site.json
// - lets Moodle call a tool on loopback (curlsecurityblockedhosts / curlsecurityallowedport empty);
// - a minimal Russian language pack in the data root (Moodle then sends locale=ru for ru users);
// - user tours off (their pop-ups would cover what the stories click);
// - a teacher and three students (one with lang=ru) enrolled in one course;
// writes the ids the stories need as JSON.

define('CLI_SCRIPT', true);

$options = [];
foreach (array_slice($argv, 1) as $arg) {
    if (preg_match('/^--([a-z]+)=(.*)$/s', $arg, $m)) {
        $options[$m[1]] = $m[2];
    }
}
foreach (['moodle', 'password', 'out'] as $required) {
    if (!isset($options[$required])) {
        fwrite(STDERR, "usage: php setup_site.php --moodle=MOODLE_SRC --password=PASSWORD --out=FILE\n");
        exit(2);
    }
}
if ($options['out'][0] !== '/') {
    $options['out'] = getcwd() . '/' . $options['out'];  // Moodle's set-up changes the directory
}
require($options['moodle'] . '/config.php');
global $CFG, $DB;
require_once($CFG->libdir . '/clilib.php');
require_once($CFG->libdir . '/testing/classes/util.php');

// Moodle refuses outgoing requests to loopback addresses and non-standard ports by default;
// the tool (its JWKS, its registration) lives on loopback here.
set_config('curlsecurityblockedhosts', '');
set_config('curlsecurityallowedport', '');

// Russian without the network: a langconfig.php is enough for Moodle to know the language and
// send locale=ru in launches. It must exist before the ru user is created (the generator
// silently stores lang=en for a language that is not installed).
$ru = $CFG->dataroot . '/lang/ru';
check_dir_exists($ru, true, true);
file_put_contents($ru . '/langconfig.php', "<?php\n"
    . "\$string['thislanguage'] = 'Русский';\n"
    . "\$string['thislanguageint'] = 'Russian';\n"
    . "\$string['locale'] = 'ru_RU.UTF-8';\n"
    . "\$string['localewin'] = 'Russian_Russia.1251';\n"
    . "\$string['parentlanguage'] = '';\n");
get_string_manager()->reset_caches(true);
if (!get_string_manager()->translation_exists('ru', false)) {
    cli_error('The minimal ru language pack was not recognised.');
}

$DB->set_field('tool_usertours_tours', 'enabled', 0);

$generator = testing_util::get_data_generator();
$course = $generator->create_course([
    'fullname' => 'Gradient checkpointing (acceptance)',
    'shortname' => 'GC-ACC',
]);
$people = [
    'teacher' => ['Tessa', 'Teacher', 'en', 'editingteacher'],
    'student1' => ['Sam', 'Student', 'en', 'student'],
    'student2' => ['Саша', 'Студентова', 'ru', 'student'],
    'student3' => ['Lee', 'Labrunner', 'en', 'student'],
    'student4' => ['Kim', 'Cookieless', 'en', 'student'],
    'student5' => ['Nora', 'Neverlaunched', 'en', 'student'],
];
$users = [];
foreach ($people as $username => [$first, $last, $lang, $role]) {
    $user = $generator->create_user([
        'username' => $username,
        'password' => $options['password'],
        'firstname' => $first,
        'lastname' => $last,
        'email' => $username . '@example.invalid',
        'lang' => $lang,
    ]);
    $stored = $DB->get_field('user', 'lang', ['id' => $user->id]);
    if ($stored !== $lang) {
        cli_error("User $username was stored with lang=$stored, not $lang.");
    }
    $generator->enrol_user($user->id, $course->id, $role);
    $users[$username] = ['id' => (int) $user->id, 'role' => $role, 'lang' => $lang,
        'fullname' => "$first $last"];
}
$admin = get_admin();
$users['admin'] = ['id' => (int) $admin->id, 'role' => 'admin', 'lang' => 'en', 'fullname' => fullname($admin)];

purge_all_caches();
file_put_contents($options['out'], json_encode([
    'wwwroot' => $CFG->wwwroot,
    'course' => ['id' => (int) $course->id, 'shortname' => $course->shortname, 'fullname' => $course->fullname],
    'users' => $users,
], JSON_PRETTY_PRINT | JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES));
echo "site set up: course {$course->id}, users " . implode(', ', array_keys($users)) . "\n";
