//! Every `bagscope` command shown in README.md and the guides in docs/ runs as written from the
//! repository root on the shipped bags (exit 0, or 3 where the bag's findings say so). Two kinds
//! are left out, on purpose: `play` (it publishes on the network and waits for subscribers; its
//! own tests run it in a private network namespace) and `synth perf` (a 3 M-message benchmark
//! bag).

mod common;

/// The `console` blocks of a Markdown file: each `$ bagscope …` line's arguments and the output
/// shown under it.
fn console_examples(md: &str) -> Vec<(Vec<String>, String)> {
    let mut out: Vec<(Vec<String>, String)> = Vec::new();
    let mut in_console = false;
    for line in md.lines() {
        if line.starts_with("```") {
            in_console = !in_console && line == "```console";
            continue;
        }
        if !in_console {
            continue;
        }
        if let Some(cmd) = line.strip_prefix("$ bagscope ") {
            out.push((
                cmd.split_whitespace().map(String::from).collect(),
                String::new(),
            ));
        } else if let Some((_, shown)) = out.last_mut() {
            shown.push_str(line);
            shown.push('\n');
        }
    }
    out
}

/// The `bagscope …` command lines of the shell blocks of a Markdown file (continuation lines
/// joined), with `bagscope` replaced by nothing: the arguments, split on whitespace.
fn commands(md: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in md.lines() {
        if line.starts_with("```") {
            in_sh = !in_sh && line == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let l = line.trim();
        let l = l.strip_prefix("$ ").unwrap_or(l);
        if pending.is_empty() && !l.starts_with("bagscope ") {
            continue;
        }
        let l = l.split(" #").next().unwrap_or(l);
        pending.push_str(l.trim_end_matches('\\'));
        pending.push(' ');
        if !l.ends_with('\\') {
            let args: Vec<String> = pending
                .split_whitespace()
                .skip(1)
                .map(String::from)
                .collect();
            out.push(args);
            pending.clear();
        }
    }
    out
}

#[test]
fn documented_commands_run_as_written() {
    let root = common::root();
    // The guides write their outputs under /tmp; here each run gets a fresh folder instead.
    let tmp = common::tempdir("docs");
    let mut ran = 0;
    let mut docs = vec!["README.md".to_string()];
    let mut guides: Vec<String> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| format!("docs/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".md"))
        .collect();
    guides.sort();
    docs.extend(guides);
    for doc in &docs {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        for args in commands(&text) {
            if args.first().map(String::as_str) == Some("play")
                || args.get(..2) == Some(&["synth".to_string(), "perf".to_string()])
            {
                continue;
            }
            let run_args: Vec<String> = args
                .iter()
                .map(|a| match a.strip_prefix("/tmp/") {
                    Some(rest) => tmp.join(rest).display().to_string(),
                    None => a.clone(),
                })
                .collect();
            let out = std::process::Command::new(common::bin())
                .args(&run_args)
                .current_dir(&root)
                .output()
                .unwrap();
            let code = out.status.code().unwrap_or(-1);
            assert!(
                code == 0 || code == 3,
                "{doc}: `bagscope {}` exited {code}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            );
            ran += 1;
        }
    }
    assert!(ran >= 20, "only {ran} documented commands found");
}

/// The README's quick start shows real output: what the commands print today, line for line.
#[test]
fn readme_output_is_what_the_commands_print() {
    let root = common::root();
    let text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let examples = console_examples(&text);
    assert!(examples.len() >= 3, "README.md: no console examples");
    let tmp = common::tempdir("readme");
    for (args, shown) in examples {
        // Outputs the examples write go to a temporary folder, printed under the README's name.
        let mut run_args = args.clone();
        let mut out_dir = None;
        if let Some(i) = run_args.iter().position(|a| a == "-o") {
            let d = tmp.join(&run_args[i + 1]);
            out_dir = Some((run_args[i + 1].clone(), d.display().to_string()));
            run_args[i + 1] = d.display().to_string();
        }
        let out = std::process::Command::new(common::bin())
            .args(&run_args)
            .current_dir(&root)
            .output()
            .unwrap();
        let mut got = String::from_utf8_lossy(&out.stdout).into_owned();
        if let Some((shown_dir, real_dir)) = out_dir {
            got = got.replace(&real_dir, &shown_dir);
        }
        let norm = |s: &str| s.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
        assert_eq!(
            norm(&got),
            norm(&shown),
            "README.md: `bagscope {}` prints something else now",
            args.join(" ")
        );
    }
}
