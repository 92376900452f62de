use super::*;

const MINIMAL: &str = "site:\n  name: S\n  url: https://example.com\n";

#[test]
fn defaults_fill_in() {
    let c = SiteConfig::from_yaml(MINIMAL).unwrap();
    assert_eq!((c.site.per_page, c.site.max_per_page), (10, 100));
    assert_eq!((c.limits.json_bytes, c.versions.keep), (1024 * 1024, 50));
}

#[test]
fn a_content_model_is_checked_when_the_site_loads_naming_its_key() {
    let site = |fields: &str| {
        format!(
            "{MINIMAL}collections:\n  - label: Authors\n    path: content/authors\n  - label: Posts\n    path: content/posts\n{fields}"
        )
    };
    let loaded = SiteConfig::from_yaml(&site(
        "    fields:\n      title: { type: string, required: true }\n      author: { type: reference, collection: authors }\n",
    ))
    .unwrap();
    let collections = crate::collection::Collection::all_from_config(&loaded.collections);
    let model = collections[1].model.as_ref().expect("posts has a model");
    assert_eq!(model.fields.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(), ["title", "author"]);
    assert!(collections[0].model.is_none());
    let refused = [
        (
            "    fields:\n      author: { type: reference, collection: people }\n",
            "collections[1].fields.author.collection: no collection has the slug \"people\"; the collections are authors, posts",
        ),
        ("    extra_fields: refuse\n", "collections[1].extra_fields: refuse needs fields"),
        (
            "    fields:\n      n: { type: integer, default: x }\n",
            "collections[1].fields.n.default must be a whole number",
        ),
    ];
    for (fields, expected) in refused {
        let error = SiteConfig::from_yaml(&site(fields)).unwrap_err().to_string();
        assert!(error.contains(expected), "{fields}: {error}");
    }
    let unknown =
        SiteConfig::from_yaml(&site("    fields:\n      n: { type: strng }\n")).unwrap_err().to_string();
    assert!(unknown.contains("strng"), "{unknown}");
}

/// The core reads the backend's kind and keeps its settings as written; the bucket's
/// are checked by `cms-s3` (its tests and the binary's config tests).
#[test]
fn storage_is_a_kind_and_the_backends_settings() {
    assert_eq!(SiteConfig::from_yaml(MINIMAL).unwrap().storage, StorageConfig::default());
    let text = format!("{MINIMAL}storage:\n  kind: s3\n  bucket: site\n  endpoint: http://127.0.0.1:9000\n");
    let storage = SiteConfig::from_yaml(&text).unwrap().storage;
    assert_eq!(storage.kind, StorageKind::S3);
    assert_eq!(storage.settings["bucket"], "site");
    assert_eq!(storage.settings.len(), 2);
    let message =
        SiteConfig::from_yaml(&format!("{MINIMAL}storage:\n  kind: ftp\n")).unwrap_err().to_string();
    assert!(message.contains("ftp"), "{message}");
    let message = SiteConfig::from_yaml_with(&text, |storage| -> Result<(), ConfigError> {
        Err(ConfigError::Invalid(format!("storage.endpoint is wrong for {:?}", storage.kind)))
    })
    .unwrap_err()
    .to_string();
    assert!(message.starts_with("line 7 column 3: storage.endpoint"), "{message}");
}

#[test]
fn unknown_key_names_key_and_line() {
    let text = format!("{MINIMAL}collections:\n  - label: Posts\n    path: content/posts\n    colour: red\n");
    let message = SiteConfig::from_yaml(&text).unwrap_err().to_string();
    assert!(message.contains("colour"), "{message}");
    assert!(message.contains("line 7"), "{message}");
}

/// A value of the wrong type names the key path, the line and what was expected, in
/// plain words (not serde's `invalid u32`).
#[test]
fn a_wrong_type_names_the_key_the_line_and_what_was_expected() {
    let cases = [
        (
            "site:\n  name: S\n  url: https://e.com\n  per_page: ten\n",
            "site.per_page",
            "line 4",
            "a whole number",
        ),
        (
            &format!("{MINIMAL}collections:\n  - label: A\n    path: p\n    date_prefix: maybe\n"),
            "collections[0].date_prefix",
            "line 7",
            "true or false",
        ),
        (&format!("{MINIMAL}webhooks: 5\n"), "webhooks", "line 4", "a mapping"),
        (&format!("{MINIMAL}storage:\n  kind: ftp\n"), "storage.kind", "line 5", "fs, s3"),
        (&format!("{MINIMAL}collections:\n  - label: A\n"), "collections[0]", "line 5", "path"),
    ];
    for (text, key, line, expected) in cases {
        let message = SiteConfig::from_yaml(text).unwrap_err().to_string();
        assert!(message.contains(key), "{text}: {message}");
        assert!(message.contains(line), "{text}: {message}");
        assert!(message.contains(expected), "{text}: {message}");
        assert!(!message.contains("invalid u32") && !message.contains("invalid boolean"), "{message}");
    }
}

/// A value that parses but is refused by a check names its line too.
#[test]
fn a_refused_value_names_its_line() {
    let text = "site:\n  name: S\n  url: https://e.com\n  per_page: 0\n";
    let message = SiteConfig::from_yaml(text).unwrap_err().to_string();
    assert!(message.starts_with("line 4 column 3: site.per_page must be"), "{message}");
    let text = format!("{MINIMAL}collections:\n  - label: A\n    path: a\n  - label: B\n    path: ../b\n");
    let message = SiteConfig::from_yaml(&text).unwrap_err().to_string();
    assert!(message.starts_with("line 8 column 5: collections[1].path must be"), "{message}");
    // A check of a default value has no line to name.
    let text = format!("{MINIMAL}signin:\n  max_lock_secs: 10\n");
    let message = SiteConfig::from_yaml(&text).unwrap_err().to_string();
    assert!(message.starts_with("line 5 column 3: signin.max_lock_secs"), "{message}");
}

/// A key given twice is named with its path and in plain words, not with the
/// parser's option names.
#[test]
fn a_duplicated_key_is_named_in_plain_words() {
    let message = SiteConfig::from_yaml(&format!("{MINIMAL}  name: T\n")).unwrap_err().to_string();
    assert!(message.contains("site.name") && message.contains("line 4"), "{message}");
    assert!(message.contains("twice"), "{message}");
    assert!(!message.contains("DuplicateKeyPolicy") && !message.contains("Options"), "{message}");
}

/// An unclosed `[` is reported where it was opened, not on the line where the parser
/// gave up.
#[test]
fn an_unclosed_bracket_is_reported_where_it_opens() {
    let text =
        format!("{MINIMAL}cors:\n  allowed_origins: [https://a.example, https://b.example\nlimits: {{}}\n");
    let message = SiteConfig::from_yaml(&text).unwrap_err().to_string();
    assert!(message.starts_with("line 5 column 20"), "{message}");
    assert!(message.contains("cors.allowed_origins") && message.contains("never closed"), "{message}");
}

#[test]
fn refuses_resource_folders_over_collections_or_each_other() {
    let cases = [
        "collections:\n  - {label: Posts, path: content/posts}\nresources:\n  - {label: U, path: content/posts, url: /u}\n",
        "collections:\n  - {label: Posts, path: content/posts}\nresources:\n  - {label: U, path: content, url: /u}\n",
        "resources:\n  - {label: A, path: media, url: /a}\n  - {label: B, path: media/b, url: /b}\n",
        "resources:\n  - {label: A, path: media/a, url: /media}\n  - {label: B, path: media/b, url: /media/b}\n",
    ];
    for case in cases {
        let message = SiteConfig::from_yaml(&format!("{MINIMAL}{case}")).unwrap_err().to_string();
        assert!(message.contains("overlap"), "{case}: {message}");
    }
}

#[test]
fn webhook_timeouts_are_bounded() {
    for bad in [0, 301, u64::MAX] {
        let text = format!("{MINIMAL}webhooks:\n  timeout_secs: {bad}\n");
        assert!(SiteConfig::from_yaml(&text).unwrap_err().to_string().contains("timeout_secs"), "{bad}");
    }
    for bad in ["retry_delays_secs: [0]", "retry_delays_secs: [100000]", "disable_after: 0"] {
        let text = format!("{MINIMAL}webhooks:\n  {bad}\n");
        let key = bad.split(':').next().unwrap();
        assert!(SiteConfig::from_yaml(&text).unwrap_err().to_string().contains(key), "{bad}");
    }
}

#[test]
fn refuses_overlapping_collection_folders() {
    for (a, b) in [("content/posts", "content/posts/"), ("content", "content/posts"), ("./c/x", "c/x/y")] {
        let text =
            format!("{MINIMAL}collections:\n  - {{label: A, path: {a:?}}}\n  - {{label: B, path: {b:?}}}\n");
        let message = SiteConfig::from_yaml(&text).unwrap_err().to_string();
        assert!(message.contains("overlap"), "{a} {b}: {message}");
    }
    let fine = format!(
        "{MINIMAL}collections:\n  - {{label: A, path: content/post}}\n  - {{label: B, path: content/posts}}\n"
    );
    assert!(SiteConfig::from_yaml(&fine).is_ok());
}

#[test]
fn hardening_bounds_have_defaults_and_are_checked() {
    let c = SiteConfig::from_yaml(MINIMAL).unwrap();
    assert_eq!((c.server.header_timeout_secs, c.server.body_timeout_secs), (10, 30));
    assert_eq!((c.signin.failures_per_account, c.mcp.max_sessions_per_key), (5, 8));
    assert!(!c.webhooks.allow_private_addresses);
    assert!(c.webhooks.outside_edits);
    for (case, named) in [
        ("server:\n  body_timeout_secs: 0\n", "server.body_timeout_secs"),
        ("server:\n  allowed_hosts: ['http://x']\n", "server.allowed_hosts[0]"),
        ("server:\n  trusted_proxies: [10.0.0.1, 10.0.0.0/40]\n", "server.trusted_proxies[1]"),
        ("signin:\n  lock_secs: 60\n  max_lock_secs: 10\n", "signin.max_lock_secs"),
        ("mcp:\n  max_sessions: 4\n  max_sessions_per_key: 8\n", "mcp.max_sessions_per_key"),
    ] {
        let message = SiteConfig::from_yaml(&format!("{MINIMAL}{case}")).unwrap_err().to_string();
        assert!(message.contains(named), "{case}: {message}");
    }
}

#[test]
fn keep_alive_has_a_default_and_a_range() {
    assert_eq!(SiteConfig::from_yaml(MINIMAL).unwrap().server.keep_alive_secs, 5);
    let set = SiteConfig::from_yaml(&format!("{MINIMAL}server:\n  keep_alive_secs: 75\n")).unwrap();
    assert_eq!(set.server.keep_alive_secs, 75);
    for bad in ["0", "3601"] {
        let text = format!("{MINIMAL}server:\n  keep_alive_secs: {bad}\n");
        let message = SiteConfig::from_yaml(&text).unwrap_err().to_string();
        assert!(message.contains("server.keep_alive_secs"), "{message}");
    }
}

#[test]
fn the_access_log_is_on_for_every_request_by_default_and_its_sample_is_a_share() {
    let defaults = SiteConfig::from_yaml(MINIMAL).unwrap().server;
    assert_eq!((defaults.access_log, defaults.access_log_sample), (true, 1.0));
    let set =
        SiteConfig::from_yaml(&format!("{MINIMAL}server:\n  access_log: false\n  access_log_sample: 0.01\n"))
            .unwrap()
            .server;
    assert_eq!((set.access_log, set.access_log_sample), (false, 0.01));
    for bad in ["1.5", "-0.1", ".nan"] {
        let text = format!("{MINIMAL}server:\n  access_log_sample: {bad}\n");
        let message = SiteConfig::from_yaml(&text).unwrap_err().to_string();
        assert!(message.contains("server.access_log_sample must be between 0 and 1"), "{bad}: {message}");
    }
}

#[test]
fn answers_are_held_in_memory_below_128_mb_by_default() {
    assert_eq!(SiteConfig::from_yaml(MINIMAL).unwrap().server.answers_memory_mb, 128);
    let none = SiteConfig::from_yaml(&format!("{MINIMAL}server:\n  answers_memory_mb: 0\n")).unwrap();
    assert_eq!(none.server.answers_memory_mb, 0);
    let text = format!("{MINIMAL}server:\n  answers_memory_mb: 2000000\n");
    let message = SiteConfig::from_yaml(&text).unwrap_err().to_string();
    assert!(message.contains("server.answers_memory_mb must be between 0 and 1048576"), "{message}");
    let text = format!("{MINIMAL}server:\n  answers_memory_mb: -1\n");
    assert!(SiteConfig::from_yaml(&text).is_err(), "not a size");
}

#[test]
fn render_bounds_are_settings_with_checked_ranges() {
    let minimal = "site:\n  name: S\n  url: https://example.com\n";
    let parsed = SiteConfig::from_yaml(minimal).unwrap().images;
    assert_eq!((parsed.render_timeout_secs, parsed.queue_timeout_secs), (15, 5));
    assert!(!parsed.render_source_size);
    let limits = parsed.limits();
    assert_eq!(limits.render_timeout, std::time::Duration::from_secs(15));
    assert_eq!(limits.queue_timeout, std::time::Duration::from_secs(5));
    let set = "images:\n  render_timeout_secs: 30\n  queue_timeout_secs: 2\n  render_source_size: true\n";
    let c = SiteConfig::from_yaml(&format!("{minimal}{set}")).unwrap().images;
    assert_eq!((c.render_timeout_secs, c.queue_timeout_secs, c.max_side()), (30, 2, None));
    for (case, named) in [
        ("render_timeout_secs: 0", "images.render_timeout_secs"),
        ("render_timeout_secs: 601", "images.render_timeout_secs"),
        ("queue_timeout_secs: 0", "images.queue_timeout_secs"),
        ("queue_timeout_secs: 301", "images.queue_timeout_secs"),
    ] {
        let text = format!("{minimal}images:\n  {case}\n");
        let message = SiteConfig::from_yaml(&text).unwrap_err().to_string();
        assert!(message.contains(named), "{case}: {message}");
    }
}

#[test]
fn refuses_paths_out_of_the_site() {
    for path in ["../x", "/etc", "content/../../x", ".cms/x", ""] {
        let text = format!("{MINIMAL}collections:\n  - label: Posts\n    path: {path:?}\n");
        assert!(SiteConfig::from_yaml(&text).is_err(), "{path}");
    }
}

#[test]
fn git_is_off_unless_named_and_its_names_are_checked_at_load() {
    assert_eq!(SiteConfig::from_yaml(MINIMAL).unwrap().git, None);
    let on = SiteConfig::from_yaml(&format!("{MINIMAL}git: {{}}\n")).unwrap().git.unwrap();
    assert_eq!(on, GitConfig::default());
    assert_eq!((on.branch.as_str(), on.remote, on.push_every_secs, on.group_window_ms), ("main", None, 0, 0));
    assert_eq!((on.pull_every_secs, on.pull_token_env), (60, None));
    let refused = [
        ("git:\n  branch: 'a b'\n", "line 5 column 3: git.branch must be a git branch name"),
        ("git:\n  branch: '-x'\n", "git.branch must be a git branch name"),
        ("git:\n  branch: a..b\n", "git.branch must be a git branch name"),
        ("git:\n  remote: 'origin/main'\n", "git.remote must name a remote"),
        ("git:\n  push_every_secs: 90000\n", "git.push_every_secs must be between 0 and 86400"),
        ("git:\n  group_window_ms: 60001\n", "git.group_window_ms must be between 0 and 60000"),
        ("git:\n  pull_every_secs: 86401\n", "git.pull_every_secs must be between 0 and 86400"),
        (
            "git:\n  remote: origin\n  pull_token_env: 'A B'\n",
            "git.pull_token_env must name an environment variable",
        ),
        ("git:\n  pull: yes\n", "git: unknown key `pull`"),
        ("storage:\n  kind: s3\ngit: {}\n", "git: is for sites kept in their folder"),
        (
            "git:\n  pull_token_env: SECRET\n",
            "git.pull_token_env opens POST /cms/git/pull, which pulls from git.remote",
        ),
    ];
    for (yaml, expected) in refused {
        let error = SiteConfig::from_yaml(&format!("{MINIMAL}{yaml}")).unwrap_err().to_string();
        assert!(error.contains(expected), "{yaml}: {error}");
    }
}
