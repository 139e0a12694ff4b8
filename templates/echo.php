<?php
// lighten's echo script, prepended to every PHP request in sandbox test runs: answers with
// the variables the web server handed to PHP, as JSON, and stops.
header('Content-Type: application/json');
header('X-Lighten-Echo: 1');
$out = array('script' => isset($_SERVER['SCRIPT_FILENAME']) ? $_SERVER['SCRIPT_FILENAME'] : null);
foreach ($_SERVER as $k => $v) {
    if (is_string($v)) {
        $out[$k] = $v;
    }
}
echo json_encode($out, JSON_UNESCAPED_SLASHES);
exit;
