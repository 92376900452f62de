//! Modules layered in every crate of the workspace: no import circles at any grain. At
//! each module, its child modules form a layering (plain types at the bottom, ports above
//! them, the facade or the handlers on top), checked over the paths each module's code
//! names: `crate::a::b`, `super::x`, `self::x` and a child's name, in `use` statements
//! (braces expanded) and inline, with the tests left out (inline `mod tests`, and modules
//! declared under `#[cfg(test)]` in files of their own). A module naming its own parent
//! or child is containment, not layering: only siblings (at their nearest common parent)
//! are compared, so `service::items` ↔ `service::index` is a circle, and so is
//! `model::filter` ↔ `model::kept`.

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::fs;
    use std::path::{Path, PathBuf};

    /// A module's path from its crate's root (`[]` is `lib.rs` or `main.rs`).
    type Module = Vec<String>;

    /// Circles still known, each allowed only between these sibling modules: none.
    const KNOWN: &[&[&str]] = &[];

    fn rust_files(folder: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The module a source file is: `a/b.rs` and `a/b/mod.rs` are `a::b`.
    fn module_of(relative: &Path) -> Module {
        let mut parts: Module = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned())
            .collect();
        if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
            parts.pop();
        }
        parts
    }

    /// A file's code without its inline test modules (`#[cfg(test)]` then `mod x {`, to
    /// the end of the file, where they stand) and its comments. A test module in a file of
    /// its own (`mod x;`) is left out by [`test_modules`], and the file goes on after it.
    fn code_of(text: &str) -> String {
        let lines: Vec<&str> = text.lines().collect();
        let end = lines
            .windows(2)
            .position(|pair| pair[0].trim() == "#[cfg(test)]" && is_inline_module(pair[1]))
            .unwrap_or(lines.len());
        lines[..end]
            .iter()
            .filter(|l| !l.trim_start().starts_with("//"))
            .map(|l| l.split(" // ").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `mod x {` (an inline module), not `mod x;`.
    fn is_inline_module(line: &str) -> bool {
        let line = line.trim().trim_start_matches("pub(crate) ").trim_start_matches("pub ");
        line.starts_with("mod ") && line.contains('{')
    }

    /// Expands a `use` tree such as `super::{a::X, b::{c, d}}` into its paths.
    fn expand(tree: &str) -> Vec<String> {
        let tree: String = tree.chars().filter(|c| !c.is_whitespace()).collect();
        let Some(open) = tree.find('{') else { return vec![tree] };
        let prefix = &tree[..open];
        let close = tree.rfind('}').filter(|&close| close > open).unwrap_or(tree.len());
        let inner = &tree[open + 1..close];
        let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
        for (at, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&inner[start..at]);
                    start = at + 1;
                }
                _ => {}
            }
        }
        parts.push(&inner[start..]);
        parts.into_iter().filter(|p| !p.is_empty()).flat_map(|p| expand(&format!("{prefix}{p}"))).collect()
    }

    /// Every path the code names that may lead to a module of its crate.
    fn paths_in(code: &str) -> Vec<String> {
        let mut paths = Vec::new();
        // `use` statements, braces expanded (they may span lines): a line that starts
        // with `use` or `pub ... use`, to its `;`.
        let mut rest = code;
        while let Some(at) = rest.find("use ") {
            let line_start = rest[..at].rfind('\n').map_or(0, |n| n + 1);
            let head = rest[line_start..at].trim();
            rest = &rest[at + 4..];
            if !(head.is_empty() || head.starts_with("pub")) || head.contains(['"', '=']) {
                continue;
            }
            let end = rest.find(';').unwrap_or(rest.len());
            paths.extend(expand(&rest[..end]));
            rest = &rest[end..];
        }
        // Inline paths: `crate::x::y`, `super::x`, `self::x` anywhere.
        for prefix in ["crate::", "super::", "self::"] {
            for (at, _) in code.match_indices(prefix) {
                if code[..at].chars().last().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                    continue;
                }
                let path: String = code[at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                paths.push(path);
            }
        }
        paths
    }

    /// The module of the crate that `path`, named in `module`, leads to: the longest
    /// prefix of it that is a module.
    fn resolve(path: &str, module: &Module, modules: &BTreeSet<Module>) -> Option<Module> {
        let mut segments = path.split("::").filter(|s| !s.is_empty()).peekable();
        let mut base: Module = match *segments.peek()? {
            "crate" => {
                segments.next();
                Vec::new()
            }
            "self" => {
                segments.next();
                module.clone()
            }
            "super" => {
                let mut base = module.clone();
                while segments.next_if_eq(&"super").is_some() {
                    base.pop()?;
                }
                base
            }
            // A child module named by its name alone (`use items::X` in `service`).
            first => {
                let mut child = module.clone();
                child.push(first.to_owned());
                if !modules.contains(&child) {
                    return None;
                }
                module.clone()
            }
        };
        for segment in segments {
            base.push(segment.to_owned());
            if !modules.contains(&base) {
                base.pop();
                break;
            }
        }
        Some(base)
    }

    /// Each module with the modules its code names.
    fn imports(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let texts: Vec<(Module, String)> = files
            .iter()
            .map(|f| (module_of(f.strip_prefix(src).unwrap()), fs::read_to_string(f).unwrap()))
            .collect();
        // Modules declared for tests only (`#[cfg(test)]` before `mod x;`), in files of
        // their own, are tests too: left out with everything below them.
        let tests: BTreeSet<Module> =
            texts.iter().flat_map(|(module, text)| test_modules(module, text)).collect();
        let is_test = |module: &Module| tests.iter().any(|t| module.starts_with(t));
        let modules: BTreeSet<Module> =
            texts.iter().map(|(m, _)| m.clone()).filter(|m| !is_test(m)).collect();
        let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
        for (module, text) in &texts {
            if is_test(module) {
                continue;
            }
            let named: BTreeSet<Module> = paths_in(&code_of(text))
                .iter()
                .filter_map(|path| resolve(path, module, &modules))
                .filter(|target| target != module)
                .collect();
            graph.entry(module.clone()).or_default().extend(named);
        }
        graph
    }

    /// The child modules `module`'s file declares for tests only, in files of their own.
    fn test_modules(module: &Module, text: &str) -> Vec<Module> {
        let mut found = Vec::new();
        let mut lines = text.lines().map(str::trim).peekable();
        while let Some(line) = lines.next() {
            if line != "#[cfg(test)]" {
                continue;
            }
            let Some(next) = lines.peek() else { break };
            let declared = next.trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            if let Some(name) = declared.strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')) {
                let mut child = module.clone();
                child.push(name.trim().to_owned());
                found.push(child);
            }
        }
        found
    }

    /// The edges between siblings, grouped by their parent: `a::b::c` naming `a::d::e`
    /// is `b` naming `d` under `a`. Naming an ancestor or a descendant is left out.
    fn sibling_edges(
        graph: &BTreeMap<Module, BTreeSet<Module>>,
    ) -> BTreeMap<Module, BTreeSet<(String, String)>> {
        let mut grouped: BTreeMap<Module, BTreeSet<(String, String)>> = BTreeMap::new();
        for (from, targets) in graph {
            for to in targets {
                let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
                if common == from.len() || common == to.len() {
                    continue;
                }
                grouped
                    .entry(from[..common].to_vec())
                    .or_default()
                    .insert((from[common].clone(), to[common].clone()));
            }
        }
        grouped
    }

    /// "a imports b, which leads back to a" for each circle, at every grain.
    fn circles(src: &Path) -> Vec<String> {
        let mut circles = Vec::new();
        for (parent, edges) in sibling_edges(&imports(src)) {
            let reach = |from: &str| {
                let mut seen = BTreeSet::new();
                let mut todo = vec![from.to_owned()];
                while let Some(module) = todo.pop() {
                    for (_, next) in edges.iter().filter(|(a, _)| *a == module) {
                        if seen.insert(next.clone()) {
                            todo.push(next.clone());
                        }
                    }
                }
                seen
            };
            for (module, name) in &edges {
                if !reach(name).contains(module) {
                    continue;
                }
                let known = KNOWN.iter().any(|k| k.contains(&module.as_str()) && k.contains(&name.as_str()));
                if !known {
                    let at =
                        if parent.is_empty() { String::new() } else { format!("{}::", parent.join("::")) };
                    circles
                        .push(format!("{at}{module} imports {at}{name}, which leads back to {at}{module}"));
                }
            }
        }
        circles
    }

    fn crates() -> Vec<(String, PathBuf)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut found: Vec<(String, PathBuf)> = fs::read_dir(root.join("crates"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("src").is_dir())
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p.join("src")))
            .collect();
        found.push(("xtask".into(), root.join("xtask/src")));
        found.sort();
        found
    }

    #[test]
    fn no_crate_has_import_circles_at_any_grain() {
        let crates = crates();
        assert!(crates.len() >= 10, "every crate was found: {crates:?}");
        let mut all = Vec::new();
        for (name, src) in &crates {
            assert!(!imports(src).is_empty(), "{name}'s modules were read");
            all.extend(circles(src).into_iter().map(|c| format!("{name}: {c}")));
        }
        assert!(all.is_empty(), "import circles:\n{}", all.join("\n"));
    }

    #[test]
    fn the_core_graph_sees_nested_and_relative_paths() {
        let graph = imports(&crates().into_iter().find(|(n, _)| n == "cms-core").unwrap().1);
        let module = |path: &str| path.split("::").map(str::to_owned).collect::<Module>();
        // `use super::{Cms, Viewer, read, write}` and `use crate::changes::{...}`.
        assert!(graph[&module("service::search")].contains(&module("service")), "{graph:?}");
        assert!(graph[&module("service::search")].contains(&module("changes")));
        assert!(graph[&module("service::items")].contains(&module("service::index")));
    }

    /// The checker itself, on a planted tree: a circle through `super::` between two
    /// nested siblings, one through `crate::` paths in braces, and none where a child
    /// names its parent.
    #[test]
    fn a_planted_circle_through_super_is_found() {
        let root = std::env::temp_dir().join(format!("layers-test-{}", std::process::id()));
        let src = root.join("src");
        let write = |path: &str, text: &str| {
            let path = src.join(path);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        write("lib.rs", "pub mod model;\npub mod plain;\npub mod top;\n");
        write("model/mod.rs", "mod filter;\nmod kept;\npub use filter::Filter;\n");
        write("model/filter.rs", "use super::kept::Kept;\npub struct Filter;\n");
        write("model/kept.rs", "#[cfg(test)]\nmod tests;\n\nuse super::{Model, filter::Filter};\n");
        write("model/kept/tests.rs", "use crate::top::T;\n");
        write(
            "plain.rs",
            "pub struct Plain;\n#[cfg(test)]\nmod tests { use crate::top::T; }\n#[cfg(test)]\nmod more;\n",
        );
        write("plain/more.rs", "use crate::top::T;\n");
        write("top.rs", "use crate::{model::Filter, plain::Plain};\n");
        let found = circles(&src);
        assert_eq!(
            found,
            [
                "model::filter imports model::kept, which leads back to model::filter",
                "model::kept imports model::filter, which leads back to model::kept",
            ],
            "tests and parent/child paths are not circles"
        );
        write("plain.rs", "pub struct Plain;\npub fn f() { crate::top::g() }\n");
        assert_eq!(circles(&src).len(), 4, "{:?}", circles(&src));
        fs::remove_dir_all(&root).unwrap();
    }
}
