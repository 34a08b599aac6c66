<?php
// Moodle's own quiz for `make bench-vs-moodle` (bench/vs_moodle.py), after setup_site.php:
//   php bench_quiz.php --moodle=MOODLE_SRC --course=ID --questions=FILE --students=N
//                      --password=PASSWORD --out=FILE
// - a quiz in "Immediate feedback" mode, one question per page, options in a fixed order,
//   unlimited attempts, free navigation, every review option on during the attempt;
// - the questions of FILE (JSON: [{name, text, options: [..], correct: index, explanation}]),
//   each a single-answer multiple choice with the explanation as its general feedback,
//   in the quiz's own question bank, added to the quiz in order;
// - N students (bench001...) enrolled in the course.
// Uses Moodle's APIs (the data generator for the course module and users, the question
// type's save_question for questions: the question generator's helpers need PHPUnit, which a
// release tree lacks). Writes the quiz's ids and the students' usernames as JSON.

define('CLI_SCRIPT', true);

$options = [];
foreach (array_slice($argv, 1) as $arg) {
    if (preg_match('/^--([a-z]+)=(.*)$/s', $arg, $m)) {
        $options[$m[1]] = $m[2];
    }
}
foreach (['moodle', 'course', 'questions', 'students', 'password', 'out'] as $required) {
    if (!isset($options[$required])) {
        fwrite(STDERR, "usage: php bench_quiz.php --moodle=SRC --course=ID --questions=FILE"
            . " --students=N --password=PASSWORD --out=FILE\n");
        exit(2);
    }
}
foreach (['questions', 'out'] as $path) {
    if ($options[$path][0] !== '/') {
        $options[$path] = getcwd() . '/' . $options[$path];  // Moodle's set-up changes the directory
    }
}
$questions = json_decode(file_get_contents($options['questions']), true);
require($options['moodle'] . '/config.php');
global $CFG, $DB, $USER;
require_once($CFG->libdir . '/clilib.php');
require_once($CFG->libdir . '/testing/classes/util.php');
require_once($CFG->libdir . '/questionlib.php');
require_once($CFG->dirroot . '/mod/quiz/locallib.php');

\core\session\manager::set_user(get_admin());
$generator = testing_util::get_data_generator();
$course = get_course((int) $options['course']);

$quiz = $generator->create_module('quiz', [
    'course' => $course->id,
    'name' => 'Gradient checkpointing quiz (Moodle)',
    'preferredbehaviour' => 'immediatefeedback',
    'questionsperpage' => 1,
    'shuffleanswers' => 0,
    'attempts' => 0,
    'grade' => count($questions),
]);
$quizcontext = context_module::instance($quiz->cmid);
$category = question_get_default_category($quizcontext->id, true);

$qtype = question_bank::get_qtype('multichoice');
foreach ($questions as $number => $item) {
    $form = new stdClass();
    $form->category = $category->id . ',' . $category->contextid;
    $form->name = $item['name'];
    $form->questiontext = ['text' => s($item['text']), 'format' => FORMAT_HTML];
    $form->generalfeedback = ['text' => s($item['explanation']), 'format' => FORMAT_HTML];
    $form->defaultmark = 1;
    $form->penalty = 0.3333333;
    $form->single = '1';
    $form->shuffleanswers = 0;
    $form->answernumbering = 'abc';
    $form->showstandardinstruction = 0;
    $form->shownumcorrect = 0;
    $form->correctfeedback = ['text' => '', 'format' => FORMAT_HTML];
    $form->partiallycorrectfeedback = ['text' => '', 'format' => FORMAT_HTML];
    $form->incorrectfeedback = ['text' => '', 'format' => FORMAT_HTML];
    $form->status = \core_question\local\bank\question_version_status::QUESTION_STATUS_READY;
    $form->answer = [];
    $form->fraction = [];
    $form->feedback = [];
    foreach ($item['options'] as $index => $text) {
        $form->answer[] = ['text' => $text, 'format' => FORMAT_PLAIN];
        $form->fraction[] = $index === $item['correct'] ? '1.0' : '0.0';
        $form->feedback[] = ['text' => '', 'format' => FORMAT_HTML];
    }
    $form->noanswers = count($item['options']);
    $question = new stdClass();
    $question->qtype = 'multichoice';
    $question->category = $category->id;
    $question->createdby = get_admin()->id;
    $saved = $qtype->save_question($question, $form);
    quiz_add_quiz_question($saved->id, $quiz, $number + 1);
}
\mod_quiz\quiz_settings::create($quiz->id)->get_grade_calculator()->recompute_quiz_sumgrades();

$students = [];
$count = (int) $options['students'];
for ($i = 1; $i <= $count; $i++) {
    $username = sprintf('bench%03d', $i);
    $user = $generator->create_user([
        'username' => $username,
        'password' => $options['password'],
        'firstname' => 'Bench',
        'lastname' => sprintf('Student %03d', $i),
        'email' => $username . '@example.invalid',
        'lang' => 'en',
    ]);
    $generator->enrol_user($user->id, $course->id, 'student');
    $students[] = $username;
}
purge_all_caches();

file_put_contents($options['out'], json_encode([
    'quiz' => ['cmid' => (int) $quiz->cmid, 'id' => (int) $quiz->id,
        'sumgrades' => (float) $DB->get_field('quiz', 'sumgrades', ['id' => $quiz->id]),
        'slots' => $DB->count_records('quiz_slots', ['quizid' => $quiz->id])],
    'students' => $students,
], JSON_PRETTY_PRINT | JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES));
echo "bench quiz: cm {$quiz->cmid} with " . count($questions) . " questions; $count students\n";
