<?php
// What the acceptance stories read from (and, for settings that are not under test, write to)
// the acceptance Moodle, through Moodle's own APIs. Prints JSON.
//   php tool_ctl.php --moodle=MOODLE_SRC types
//   php tool_ctl.php --moodle=MOODLE_SRC activities --course=ID
//   php tool_ctl.php --moodle=MOODLE_SRC grades --course=ID
//   php tool_ctl.php --moodle=MOODLE_SRC container --type=ID --value=window|embed
//   php tool_ctl.php --moodle=MOODLE_SRC add-link --type=ID --course=ID --name=NAME --url=URL --grade=N

define('CLI_SCRIPT', true);

$options = [];
$command = null;
foreach (array_slice($argv, 1) as $arg) {
    if (preg_match('/^--([a-z]+)=(.*)$/s', $arg, $m)) {
        $options[$m[1]] = $m[2];
    } else {
        $command = $arg;
    }
}
if (!isset($options['moodle']) || $command === null) {
    fwrite(STDERR, "usage: php tool_ctl.php --moodle=MOODLE_SRC types|activities|grades|container|add-link [--name=value ...]\n");
    exit(2);
}
require($options['moodle'] . '/config.php');
global $CFG, $DB;
require_once($CFG->dirroot . '/mod/lti/locallib.php');
require_once($CFG->libdir . '/gradelib.php');

function option(array $options, string $name): string {
    if (!isset($options[$name])) {
        fwrite(STDERR, "--$name is required\n");
        exit(2);
    }
    return $options[$name];
}

$containers = ['window' => LTI_LAUNCH_CONTAINER_WINDOW, 'embed' => LTI_LAUNCH_CONTAINER_EMBED_NO_BLOCKS];

switch ($command) {
    case 'types':
        $out = [];
        foreach ($DB->get_records('lti_types', null, 'id') as $type) {
            $config = lti_get_type_config($type->id);
            $out[] = [
                'id' => (int) $type->id, 'name' => $type->name, 'baseurl' => $type->baseurl,
                'tooldomain' => $type->tooldomain, 'state' => (int) $type->state,
                'clientid' => $type->clientid, 'coursevisible' => (int) $type->coursevisible,
                'launchcontainer' => (int) ($config['launchcontainer'] ?? 0),
                'contentitem' => !empty($config['contentitem']),
                'ags' => $config['ltiservice_gradesynchronization'] ?? null,
                'nrps' => $config['ltiservice_memberships'] ?? null,
                'initiatelogin' => $config['initiatelogin'] ?? null,
            ];
        }
        echo json_encode($out, JSON_PRETTY_PRINT | JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES), "\n";
        break;

    case 'activities':
        $course = (int) option($options, 'course');
        $out = [];
        foreach ($DB->get_records('lti', ['course' => $course], 'id') as $lti) {
            $cm = get_coursemodule_from_instance('lti', $lti->id, $course);
            $item = grade_item::fetch(['itemtype' => 'mod', 'itemmodule' => 'lti',
                'iteminstance' => $lti->id, 'courseid' => $course, 'itemnumber' => 0]);
            $out[] = [
                'cmid' => (int) $cm->id, 'id' => (int) $lti->id, 'name' => $lti->name,
                'typeid' => (int) $lti->typeid, 'toolurl' => $lti->toolurl,
                'launchcontainer' => (int) $lti->launchcontainer, 'grade' => (float) $lti->grade,
                'gradeitem' => $item ? ['id' => (int) $item->id, 'grademax' => (float) $item->grademax] : null,
            ];
        }
        echo json_encode($out, JSON_PRETTY_PRINT | JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES), "\n";
        break;

    case 'grades':
        $course = (int) option($options, 'course');
        $items = $DB->get_records('grade_items', ['courseid' => $course, 'itemtype' => 'mod', 'itemmodule' => 'lti'], 'id');
        $out = [];
        foreach ($items as $item) {
            $grades = $DB->get_records_sql(
                'SELECT g.userid, u.username, g.finalgrade, g.timemodified
                   FROM {grade_grades} g JOIN {user} u ON u.id = g.userid
                  WHERE g.itemid = ?', [$item->id]);
            $out[] = [
                'itemid' => (int) $item->id, 'itemname' => $item->itemname,
                'iteminstance' => (int) $item->iteminstance, 'grademax' => (float) $item->grademax,
                'grades' => array_values(array_map(fn($g) => [
                    'username' => $g->username,
                    'finalgrade' => $g->finalgrade === null ? null : (float) $g->finalgrade,
                    'timemodified' => (int) $g->timemodified,
                ], $grades)),
            ];
        }
        echo json_encode($out, JSON_PRETTY_PRINT | JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES), "\n";
        break;

    case 'container':
        // The launch container of a site tool (a setting of the administrator's, not under test).
        $typeid = (int) option($options, 'type');
        $value = $containers[option($options, 'value')] ?? null;
        if ($value === null) {
            fwrite(STDERR, "--value must be window or embed\n");
            exit(2);
        }
        $row = $DB->get_record('lti_types_config', ['typeid' => $typeid, 'name' => 'launchcontainer']);
        if ($row) {
            $DB->set_field('lti_types_config', 'value', $value, ['id' => $row->id]);
        } else {
            $DB->insert_record('lti_types_config', (object) ['typeid' => $typeid, 'name' => 'launchcontainer', 'value' => $value]);
        }
        echo json_encode(['type' => $typeid, 'launchcontainer' => $value]), "\n";
        break;

    case 'add-link':
        // A plain link to the tool (no content selection), as an activity of a site tool.
        require_once($CFG->libdir . '/testing/classes/util.php');
        $generator = testing_util::get_data_generator();
        $lti = $generator->create_module('lti', [
            'course' => (int) option($options, 'course'),
            'typeid' => (int) option($options, 'type'),
            'name' => option($options, 'name'),
            'toolurl' => option($options, 'url'),
            'grade' => (float) ($options['grade'] ?? 8),
            // The generator's defaults (resourcekey 12345) would be sent as the launch's aud.
            'resourcekey' => '',
            'password' => '',
        ]);
        echo json_encode(['cmid' => (int) $lti->cmid, 'id' => (int) $lti->id]), "\n";
        break;

    default:
        fwrite(STDERR, "unknown command $command\n");
        exit(2);
}
