//! Modules layered inside `cms-core` and the inbound adapters (`cms-http`, `cms-admin`,
//! `cms-mcp`): no import circles between a crate's top-level modules (plain types at the
//! bottom, ports above them, the facade or the handlers on top), checked over the
//! `crate::` paths of each module's code (its tests left out).

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};
    use std::fs;
    use std::path::{Path, PathBuf};

    /// Circles still known, each allowed only within these modules: none since the kept
    /// index stopped importing the facade (`item_file.rs` holds what both use).
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

    /// Each top-level module with the top-level modules its code names (`crate::x`).
    fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for file in files {
            let relative = file.strip_prefix(src).unwrap();
            let first = relative.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
            let module = first.trim_end_matches(".rs").to_owned();
            let text = fs::read_to_string(&file).unwrap();
            let code = text.split("#[cfg(test)]\nmod ").next().unwrap();
            let names = graph.entry(module.clone()).or_default();
            for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (at, _) in line.match_indices("crate::") {
                    let rest = &line[at + "crate::".len()..];
                    let name: String =
                        rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                    if !name.is_empty() && name != module {
                        names.insert(name);
                    }
                }
            }
        }
        graph
    }

    /// The modules `from` reaches through its imports.
    fn reach(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(module) = todo.pop() {
            for next in graph.get(&module).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    }

    /// "a imports b, which leads back to a" for each circle among `src`'s modules.
    fn circles(src: &Path) -> Vec<String> {
        let graph = imports(src);
        let mut circles = Vec::new();
        for (module, names) in &graph {
            for name in names {
                if !reach(&graph, name).contains(module) {
                    continue;
                }
                let known = KNOWN
                    .iter()
                    .any(|known| known.contains(&module.as_str()) && known.contains(&name.as_str()));
                if !known {
                    circles.push(format!("{module} imports {name}, which leads back to {module}"));
                }
            }
        }
        circles
    }

    fn source_of(krate: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates").join(krate).join("src")
    }

    #[test]
    fn cms_core_has_no_import_circles() {
        let src = source_of("cms-core");
        let graph = imports(&src);
        assert!(graph.contains_key("ports") && graph.contains_key("config"), "{graph:?}");
        let circles = circles(&src);
        assert!(circles.is_empty(), "import circles in cms-core:\n{}", circles.join("\n"));
    }

    #[test]
    fn inbound_adapters_have_no_import_circles() {
        for krate in ["cms-http", "cms-admin", "cms-mcp"] {
            let src = source_of(krate);
            assert!(imports(&src).len() > 3, "{krate}'s modules were read");
            let circles = circles(&src);
            assert!(circles.is_empty(), "import circles in {krate}:\n{}", circles.join("\n"));
        }
    }
}
