//! Records the ledger keeps from tool calls on its own: files read, written and
//! created, commands run with their exit codes, and errors, open until the same
//! call succeeds.

use serde_json::Value;

use super::sentences::cut;
use super::{Found, Kind};
use crate::extractive::{SourceMessage, SourceTool};

/// Longest command kept, in bytes.
const COMMAND_BYTES: usize = 160;
/// Longest error line kept, in bytes.
const ERROR_BYTES: usize = 120;

/// Fields of a tool's input that name a file.
const PATH_FIELDS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "file",
    "filename",
    "target_file",
    "notebook_path",
    "destination",
    "dest",
];
/// Fields of a tool's input that hold a shell command.
const COMMAND_FIELDS: &[&str] = &["command", "cmd", "script", "shell"];
/// Words of a tool's name (or its editor command) that read a file.
const READS: &[&str] = &[
    "read", "view", "cat", "open", "get", "show", "load", "fetch", "head",
];
/// Words that make a file.
const CREATES: &[&str] = &["create", "new", "touch", "mkdir"];
/// Words that change a file.
const WRITES: &[&str] = &[
    "write", "save", "edit", "replace", "patch", "insert", "update", "append", "apply", "modify",
    "delete", "remove", "rename", "move",
];
/// Words of a tool's name that run commands.
const SHELLS: &[&str] = &[
    "bash",
    "shell",
    "exec",
    "terminal",
    "run",
    "cmd",
    "sh",
    "powershell",
    "zsh",
    "command",
];
/// What an exit code follows in a command's output.
const EXIT_MARKS: &[&str] = &[
    "exit code",
    "exit status",
    "exited with code",
    "exited with",
    "returncode",
    "return code",
    "exit_code",
    "rc=",
];

/// Adds the records of `message`'s tool calls to `found`.
pub(super) fn from_tools(message: &SourceMessage<'_>, found: &mut Vec<Found>) {
    for tool in &message.tools {
        let input: Option<Value> = serde_json::from_str(tool.input).ok();
        let target = if let Some(command) = command_of(tool, input.as_ref()) {
            let code = exit_code(tool.output.unwrap_or_default());
            let outcome = match code {
                Some(code) => format!("exit {code}"),
                None if tool.status == "error" => "failed".to_string(),
                None => "ran".to_string(),
            };
            let failed = tool.status == "error" || code.is_some_and(|code| code != 0);
            found.push(Found::new(
                Kind::Command,
                format!("command:{command}"),
                format!("`{command}`: {outcome}"),
                message.seq,
            ));
            let detail = code.map(|code| format!("exit {code}"));
            errors(tool, &command, failed, detail, message.seq, found);
            continue;
        } else if let Some((path, action)) = file_of(tool, input.as_ref()) {
            found.push(Found::new(
                Kind::File,
                format!("file:{action}:{path}"),
                path.clone(),
                message.seq,
            ));
            path
        } else {
            let input = cut(tool.input.trim(), 60).to_string();
            format!("{} {input}", tool.name)
        };
        errors(
            tool,
            &target,
            tool.status == "error",
            None,
            message.seq,
            found,
        );
    }
}

/// An open error for a failed call, or the resolution of one for a call that
/// succeeded on the same target. A command's error says its exit code and the last
/// line of its output (where tools print what went wrong); another's, the first
/// line of its error.
fn errors(
    tool: &SourceTool<'_>,
    target: &str,
    failed: bool,
    exit: Option<String>,
    seq: i64,
    found: &mut Vec<Found>,
) {
    let subject = format!("error:{target}");
    if failed {
        let detail = tool.error.or(tool.output).unwrap_or_default();
        let mut lines = detail
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && exit_code(line).is_none());
        let line = if exit.is_some() {
            lines.next_back()
        } else {
            lines.next()
        }
        .unwrap_or_default();
        let line = cut(line, ERROR_BYTES);
        let text = match exit {
            Some(exit) => format!("{} on {target}: {exit}: {line}", tool.name),
            None => format!("{} on {target}: {line}", tool.name),
        };
        found.push(Found::new(Kind::Error, subject, text, seq));
    } else if tool.status == "completed" {
        let text = format!("resolved: {} on {target}", tool.name);
        let mut resolved = Found::new(Kind::Error, subject, text, seq);
        resolved.only_if_live = true;
        found.push(resolved);
    }
}

/// The command a shell tool ran: its command field, or its whole input when that is
/// a plain string.
fn command_of(tool: &SourceTool<'_>, input: Option<&Value>) -> Option<String> {
    let field = COMMAND_FIELDS
        .iter()
        .find_map(|name| input?.get(*name)?.as_str())
        .or_else(|| input?.as_str());
    let named = name_words(tool.name).any(|word| SHELLS.contains(&word.as_str()));
    // An editor's "command" is one word ("create", "view"); a shell command has more.
    let command = field.filter(|text| named || text.trim().contains(' '))?;
    let line = command.lines().find(|line| !line.trim().is_empty())?;
    let one_line = line.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(cut(&one_line, COMMAND_BYTES).to_string())
}

/// The file a tool touched and how: read, written or created.
fn file_of(tool: &SourceTool<'_>, input: Option<&Value>) -> Option<(String, &'static str)> {
    let input = input?;
    let path = PATH_FIELDS
        .iter()
        .find_map(|name| input.get(*name)?.as_str())?;
    let path = path.trim();
    if path.is_empty() || path.contains('\n') {
        return None;
    }
    let mut verbs: Vec<String> = name_words(tool.name).collect();
    if let Some(command) = input.get("command").and_then(Value::as_str) {
        verbs.extend(name_words(command));
    }
    let action = if verbs.iter().any(|word| CREATES.contains(&word.as_str())) {
        "created"
    } else if verbs.iter().any(|word| WRITES.contains(&word.as_str())) {
        "written"
    } else if verbs.iter().any(|word| READS.contains(&word.as_str())) {
        "read"
    } else {
        "used"
    };
    Some((cut(path, COMMAND_BYTES).to_string(), action))
}

/// The lowercased words of a tool's name (`str_replace_based_edit_tool`, `readFile`).
fn name_words(name: &str) -> impl Iterator<Item = String> + '_ {
    let mut spaced = String::with_capacity(name.len() + 4);
    for (at, c) in name.char_indices() {
        if c.is_uppercase() && at > 0 {
            spaced.push(' ');
        }
        spaced.push(c);
    }
    spaced
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .into_iter()
}

/// The exit code a command's output reports, if it does.
pub(super) fn exit_code(output: &str) -> Option<i64> {
    let lower = output.to_lowercase();
    EXIT_MARKS.iter().find_map(|mark| {
        let at = lower.rfind(mark)? + mark.len();
        let rest = lower[at..].trim_start_matches([' ', ':', '=', '"']);
        let digits: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        digits.parse().ok()
    })
}
