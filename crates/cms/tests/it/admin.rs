//! The web editor over real HTTP: sign-in, session cookies, CSRF, the security headers,
//! role checks, the sign-in throttle, and `cms users passwd`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::{BIN, Server, cms, demo_site, stdout};

pub const PASSWORD: &str = "correct horse battery";

/// Adds a user with a role and a password.
pub fn user_with_password(site: &Path, email: &str, role: &str) {
    assert!(cms(site, &["users", "add", "--email", email, "--role", role]).status.success());
    let output = passwd(site, email, &format!("{PASSWORD}\n"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

/// `cms users passwd --email E` with `input` on standard input.
pub(crate) fn passwd(site: &Path, email: &str, input: &str) -> std::process::Output {
    let mut child = Command::new(BIN)
        .args(["--site"])
        .arg(site)
        .args(["users", "passwd", "--email", email])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// An HTTP client that keeps cookies and never follows redirects, like a browser tab
/// whose every step is checked.
pub(crate) struct Tab<'a> {
    server: &'a Server,
    agent: ureq::Agent,
    pub(crate) cookies: BTreeMap<String, String>,
}

/// What came back: status, headers we look at, body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Answer {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn set_cookie(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
            .map(|(_, v)| v.as_str())
            .find(|v| v.starts_with(&format!("{name}=")))
    }

    /// The value of the first `<input name="NAME" value="...">` of the page.
    pub(crate) fn input(&self, name: &str) -> String {
        let at = self
            .body
            .find(&format!("name=\"{name}\" value=\""))
            .unwrap_or_else(|| panic!("no {name} in {}", self.body));
        let rest = &self.body[at + name.len() + 15..];
        rest[..rest.find('"').unwrap()].replace("&#34;", "\"")
    }
}

impl<'a> Tab<'a> {
    pub(crate) fn new(server: &'a Server) -> Self {
        let agent = ureq::Agent::config_builder().http_status_as_error(false).max_redirects(0).build().into();
        Self { server, agent, cookies: BTreeMap::new() }
    }

    pub(crate) fn cookie_header(&self) -> String {
        self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
    }

    fn keep_cookies(&mut self, answer: &Answer) {
        for (name, value) in &answer.headers {
            if !name.eq_ignore_ascii_case("set-cookie") {
                continue;
            }
            let pair = value.split(';').next().unwrap();
            let (k, v) = pair.split_once('=').unwrap();
            if v.is_empty() || value.contains("Max-Age=0") {
                self.cookies.remove(k);
            } else {
                self.cookies.insert(k.to_owned(), v.to_owned());
            }
        }
    }

    fn answer(&mut self, response: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Answer {
        let mut response = response.unwrap();
        let headers = response
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        let answer = Answer {
            status: response.status().as_u16(),
            headers,
            body: response.body_mut().read_to_string().unwrap_or_default(),
        };
        self.keep_cookies(&answer);
        answer
    }

    pub(crate) fn get(&mut self, path: &str) -> Answer {
        self.get_with(path, &[])
    }

    /// [`Self::get`] with more headers.
    pub(crate) fn get_with(&mut self, path: &str, extra: &[(&str, &str)]) -> Answer {
        let mut req = self.agent.get(format!("{}{path}", self.server.base));
        if !self.cookies.is_empty() {
            req = req.header("Cookie", self.cookie_header());
        }
        for (name, value) in extra {
            req = req.header(*name, *value);
        }
        let response = req.call();
        self.answer(response)
    }

    pub(crate) fn post(&mut self, path: &str, fields: &[(&str, &str)], extra: &[(&str, &str)]) -> Answer {
        let mut req = self.agent.post(format!("{}{path}", self.server.base));
        if !self.cookies.is_empty() {
            req = req.header("Cookie", self.cookie_header());
        }
        for (name, value) in extra {
            req = req.header(*name, *value);
        }
        let response = req.send_form(fields.iter().copied());
        self.answer(response)
    }

    /// Signs in through the form; returns the answer to the post.
    pub(crate) fn sign_in(&mut self, email: &str, password: &str) -> Answer {
        let form = self.get("/admin/signin");
        assert_eq!(form.status, 200);
        let csrf = form.input("csrf");
        self.post(
            "/admin/signin",
            &[("csrf", &csrf), ("email", email), ("password", password), ("next", "/admin/")],
            &[],
        )
    }

    /// The CSRF token of the signed-in session (from any page's forms).
    pub(crate) fn csrf(&mut self) -> String {
        let home = self.get("/admin/");
        assert_eq!(home.status, 200, "signed in");
        home.input("csrf")
    }
}

#[test]
fn sign_in_sets_a_session_cookie_and_every_page_has_a_strict_csp() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let mut tab = Tab::new(&server);

    let home = tab.get("/admin/");
    assert_eq!((home.status, home.header("location")), (303, Some("/admin/signin?next=%2Fadmin%2F")));
    let form = tab.get("/admin/signin");
    assert_eq!(form.status, 200);
    assert!(
        form.body.contains(r#"name="email""#) && form.body.contains(r#"name="password""#),
        "{}",
        form.body
    );
    let csp = form.header("content-security-policy").unwrap();
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert!(
        !form.body.contains("<script>") && !form.body.contains(" style=") && !form.body.contains("<style"),
        "no inline script or style"
    );
    assert_eq!(form.header("x-frame-options"), Some("DENY"));
    assert_eq!(form.header("cache-control"), Some("no-store"));

    let signed = tab.sign_in("Owner@Example.com", PASSWORD);
    assert_eq!((signed.status, signed.header("location")), (303, Some("/admin/")));
    let cookie = signed.set_cookie("cms_session").expect("a session cookie");
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/admin", "Max-Age=43200"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "not over plain HTTP: {cookie}");
    let token = cookie.split(';').next().unwrap().split_once('=').unwrap().1;
    assert_eq!(token.len(), 64);
    let stored = std::fs::read_to_string(site.path().join(".cms/users.yaml")).unwrap();
    assert!(stored.contains("$argon2id$") && !stored.contains(PASSWORD), "{stored}");

    let home = tab.get("/admin/");
    assert_eq!(home.status, 200);
    assert!(home.body.contains("owner@example.com"), "{}", home.body);
    assert!(home.header("content-security-policy").is_some());
    for page in [
        "/admin/collections/blog-posts",
        "/admin/collections/blog-posts/items/hello-world",
        "/admin/media",
        "/admin/keys",
        "/admin/webhooks",
        "/admin/theme",
        "/admin/users",
    ] {
        let answer = tab.get(page);
        assert_eq!(answer.status, 200, "{page}: {}", answer.body);
        assert_eq!(answer.header("content-security-policy"), Some(csp), "{page}");
        assert!(!answer.body.contains("<script>") && !answer.body.contains(" style="), "{page}");
    }
    let script = tab.get("/admin/assets/admin.js");
    assert_eq!((script.status, script.header("content-type")), (200, Some("text/javascript; charset=utf-8")));

    // A client cannot say it came over HTTPS: only a trusted proxy can.
    let signed = sign_in_saying_https(&server);
    assert_eq!(signed.status, 303);
    assert!(!signed.set_cookie("cms_session").unwrap().contains("Secure"));
}

/// Signs in as the owner with `X-Forwarded-Proto: https`.
fn sign_in_saying_https(server: &Server) -> Answer {
    let mut tab = Tab::new(server);
    let csrf = tab.get("/admin/signin").input("csrf");
    tab.post(
        "/admin/signin",
        &[("csrf", &csrf), ("email", "owner@example.com"), ("password", PASSWORD)],
        &[("X-Forwarded-Proto", "https")],
    )
}

/// Behind a trusted proxy the address counted is the one the proxy saw: the nearest
/// `X-Forwarded-For` hop from the right, over every line of the header (a proxy may add
/// its own line after one the client made up).
#[test]
fn behind_a_trusted_proxy_the_address_is_the_one_it_saw_not_one_the_client_sent() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let config = site.path().join("cms.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\nserver:\n  trusted_proxies: [127.0.0.1]\n")).unwrap();
    let server = Server::start(site.path());
    let try_as = |n: usize| {
        let mut tab = Tab::new(&server);
        let csrf = tab.get("/admin/signin").input("csrf");
        let email = format!("nobody{n}@example.com");
        let made_up = format!("10.9.{}.{}", n / 200, n % 200);
        tab.post(
            "/admin/signin",
            &[("csrf", &csrf), ("email", &email), ("password", "wrong password")],
            &[("X-Forwarded-For", &made_up), ("X-Forwarded-For", "203.0.113.5")],
        )
        .status
    };
    for n in 0..20 {
        assert_eq!(try_as(n), 401, "attempt {n}");
    }
    assert_eq!(try_as(20), 429, "the address the proxy saw is locked after 20");
}

#[test]
fn behind_a_trusted_https_proxy_the_session_cookie_is_secure() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let config = site.path().join("cms.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\nserver:\n  trusted_proxies: [127.0.0.1]\n")).unwrap();
    let server = Server::start(site.path());
    let signed = sign_in_saying_https(&server);
    assert_eq!(signed.status, 303);
    assert!(signed.set_cookie("cms_session").unwrap().contains("Secure"));
}

#[test]
fn wrong_passwords_are_refused_and_slowed_per_account() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    user_with_password(site.path(), "ed@example.com", "editor");
    cms(site.path(), &["users", "add", "--email", "nopass@example.com", "--role", "editor"]);
    let server = Server::start(site.path());
    let mut tab = Tab::new(&server);

    let unknown = tab.sign_in("nobody@example.com", PASSWORD);
    assert_eq!(unknown.status, 401);
    assert!(unknown.body.contains("Wrong email or password"), "{}", unknown.body);
    assert!(unknown.set_cookie("cms_session").is_none());
    assert_eq!(tab.sign_in("nopass@example.com", "").status, 401, "a user without a password cannot sign in");
    for _ in 0..5 {
        assert_eq!(tab.sign_in("owner@example.com", "wrong password").status, 401);
    }
    let locked = tab.sign_in("owner@example.com", PASSWORD);
    assert_eq!(locked.status, 429, "{}", locked.body);
    assert!(locked.header("retry-after").is_some_and(|s| s.parse::<u64>().unwrap() >= 1));
    assert!(locked.body.contains("Too many sign-in attempts"), "{}", locked.body);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303, "other accounts are not locked");
}

/// Bursts of sign-ins sent at once (each with its own form token) get no more password
/// checks than a patient guesser: attempts are counted before the password is hashed, and
/// one account has one check in flight at a time.
#[test]
fn bursts_of_parallel_sign_ins_get_no_more_than_the_free_tries() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());
    let burst = |right_one: Option<usize>| -> Vec<u16> {
        let forms: Vec<(String, String)> = (0..40)
            .map(|_| {
                let mut tab = Tab::new(&server);
                let form = tab.get("/admin/signin");
                (tab.cookie_header(), form.input("csrf"))
            })
            .collect();
        let barrier = std::sync::Barrier::new(forms.len());
        std::thread::scope(|scope| {
            let attempts: Vec<_> = forms
                .iter()
                .enumerate()
                .map(|(i, (cookies, csrf))| {
                    let (server, barrier) = (&server, &barrier);
                    scope.spawn(move || {
                        let password = if Some(i) == right_one { PASSWORD } else { "wrong password" };
                        let agent: ureq::Agent = ureq::Agent::config_builder()
                            .http_status_as_error(false)
                            .max_redirects(0)
                            .build()
                            .into();
                        barrier.wait();
                        let fields =
                            [("csrf", csrf.as_str()), ("email", "owner@example.com"), ("password", password)];
                        let response = agent
                            .post(format!("{}/admin/signin", server.base))
                            .header("Cookie", cookies)
                            .send_form(fields)
                            .unwrap();
                        response.status().as_u16()
                    })
                })
                .collect();
            attempts.into_iter().map(|a| a.join().unwrap()).collect()
        })
    };
    // A patient guesser gets the 5 free tries, then one more each time a lock ends (the
    // first after 30 s, the next 60 s later): a slow machine may take that long.
    let started = std::time::Instant::now();
    let patient = || 5 + [30, 90, 210].iter().filter(|secs| started.elapsed().as_secs() >= **secs).count();
    let (mut checked, mut signed_in) = (0, false);
    for round in 0..8 {
        let statuses = burst((round == 0).then_some(33));
        assert!(statuses.iter().all(|s| matches!(s, 401 | 303 | 429)), "{statuses:?}");
        checked += statuses.iter().filter(|s| matches!(s, 401 | 303)).count();
        signed_in |= statuses.contains(&303);
        // The right password of round 0 clears the account's count when it is checked:
        // the failures checked before it (at most 4, or the account would have been
        // locked) and the success itself come on top of the free tries that start again.
        let allowed = patient() + if signed_in { 5 } else { 0 };
        assert!(
            checked <= allowed,
            "{checked} passwords were checked by round {round} ({allowed} allowed): {statuses:?}"
        );
    }
    if !signed_in && patient() == 5 {
        let locked = Tab::new(&server).sign_in("owner@example.com", PASSWORD);
        assert_eq!(locked.status, 429, "the account is locked after its free tries: {}", locked.body);
    }
}

#[test]
fn forms_without_the_csrf_token_or_from_another_site_are_refused() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    let server = Server::start(site.path());

    let mut stranger = Tab::new(&server);
    let refused =
        stranger.post("/admin/signin", &[("email", "owner@example.com"), ("password", PASSWORD)], &[]);
    assert_eq!(refused.status, 403, "a sign-in without its token");

    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();
    let new = "/admin/collections/blog-posts/new";
    let zeros = "0".repeat(64);
    let item = [("form", "model"), ("fm.title", "Forged"), ("status", "published"), ("body", "x")];
    let wrong = [item[0], item[1], item[2], item[3], ("csrf", zeros.as_str())];
    let right = [item[0], item[1], item[2], item[3], ("csrf", csrf.as_str())];

    let no_token = tab.post(new, &item, &[]);
    assert_eq!(no_token.status, 403, "{}", no_token.body);
    assert!(no_token.body.contains("security token"), "{}", no_token.body);
    assert_eq!(tab.post(new, &wrong, &[]).status, 403);
    assert_eq!(tab.post(new, &right, &[("Origin", "https://evil.example")]).status, 403);
    assert_eq!(tab.post(new, &right, &[("Sec-Fetch-Site", "cross-site")]).status, 403);
    let port = server.base.rsplit(':').next().unwrap();
    let rebound = format!("http://rebind.example:{port}");
    let rebinding =
        [("Origin", rebound.as_str()), ("Host", &rebound[7..]), ("X-Forwarded-Host", &rebound[7..])];
    let refused = tab.post("/admin/preview", &[("csrf", csrf.as_str()), ("body", "*x*")], &rebinding);
    assert_eq!(refused.status, 403, "a name the site does not give is not this server, whatever Host says");
    let loopback = format!("http://localhost:{port}");
    assert_eq!(
        tab.post("/admin/preview", &[("csrf", csrf.as_str()), ("body", "x")], &[("Origin", &loopback)])
            .status,
        200,
        "a loopback name on the port the server listens on"
    );
    let demo_site_url = [("Origin", "https://example.com")];
    assert_eq!(
        tab.post("/admin/preview", &[("csrf", csrf.as_str()), ("body", "x")], &demo_site_url).status,
        200
    );
    assert!(
        !site
            .path()
            .join("content/posts")
            .read_dir()
            .unwrap()
            .any(|e| { e.unwrap().file_name().to_string_lossy().contains("forged") })
    );
    let origin = server.base.clone();
    let created = tab.post(new, &right, &[("Origin", origin.as_str())]);
    assert_eq!(created.status, 303, "{}", created.body);
    assert!(
        created.header("location").unwrap().contains("forged.md?ok=created"),
        "{:?}",
        created.header("location")
    );
    let preview = tab.post("/admin/preview", &[("body", "*x*")], &[]);
    assert_eq!(preview.status, 403, "the preview is a form like any other");
}

#[test]
fn the_server_checks_roles_on_every_action() {
    let site = demo_site();
    for (email, role) in
        [("owner@example.com", "owner"), ("admin@example.com", "admin"), ("ed@example.com", "editor")]
    {
        user_with_password(site.path(), email, role);
    }
    let server = Server::start(site.path());
    let keys_before = stdout(&cms(site.path(), &["keys", "list"]));

    let mut editor = Tab::new(&server);
    assert_eq!(editor.sign_in("ed@example.com", PASSWORD).status, 303);
    let home = editor.get("/admin/");
    assert!(
        !home.body.contains("/admin/keys") && !home.body.contains("/admin/users"),
        "the navigation hides them"
    );
    for page in ["/admin/keys", "/admin/webhooks", "/admin/theme", "/admin/users"] {
        assert_eq!(editor.get(page).status, 403, "{page}");
    }
    let csrf = editor.csrf();
    let refused = [
        ("/admin/keys", vec![("user", "ed@example.com"), ("name", "mine")]),
        ("/admin/users", vec![("email", "x@example.com"), ("role", "owner")]),
        ("/admin/users/role", vec![("email", "ed@example.com"), ("role", "owner")]),
        ("/admin/theme", vec![("accent_color", "#000")]),
        ("/admin/webhooks", vec![("url", "https://hooks.example.com/x"), ("events", "file.created")]),
    ];
    for (path, mut fields) in refused {
        fields.push(("csrf", &csrf));
        let answer = editor.post(path, &fields, &[]);
        assert_eq!(answer.status, 403, "{path}: {}", answer.body);
    }
    assert_eq!(stdout(&cms(site.path(), &["keys", "list"])), keys_before, "no key was made");
    assert!(stdout(&cms(site.path(), &["users", "list"])).contains("ed@example.com editor"));
    assert_eq!(editor.get("/admin/collections/blog-posts").status, 200, "editors edit items");

    let mut admin = Tab::new(&server);
    assert_eq!(admin.sign_in("admin@example.com", PASSWORD).status, 303);
    let users = admin.get("/admin/users");
    assert_eq!(users.status, 200);
    assert!(!users.body.contains("/admin/users/role"), "admins see the list only");
    let csrf = admin.csrf();
    assert_eq!(
        admin
            .post(
                "/admin/users/role",
                &[("csrf", &csrf), ("email", "ed@example.com"), ("role", "admin")],
                &[]
            )
            .status,
        403
    );
    assert_eq!(admin.get("/admin/keys").status, 403);

    let mut owner = Tab::new(&server);
    assert_eq!(owner.sign_in("owner@example.com", PASSWORD).status, 303);
    let csrf = owner.csrf();
    let promoted = owner.post(
        "/admin/users/role",
        &[("csrf", &csrf), ("email", "ed@example.com"), ("role", "admin")],
        &[],
    );
    assert_eq!(promoted.status, 303, "{}", promoted.body);
    assert_eq!(editor.get("/admin/users").status, 200, "a new role counts on the next request");
    let last_owner =
        owner.post("/admin/users/remove", &[("csrf", &csrf), ("email", "owner@example.com")], &[]);
    assert_eq!(last_owner.status, 400, "the only owner stays: {}", last_owner.body);
}

#[test]
fn sessions_end_on_sign_out_on_removal_and_on_a_new_password() {
    let site = demo_site();
    user_with_password(site.path(), "owner@example.com", "owner");
    user_with_password(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());

    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    let kept = tab.cookies.clone();
    let csrf = tab.csrf();
    let out = tab.post("/admin/signout", &[("csrf", &csrf)], &[]);
    assert_eq!((out.status, out.header("location")), (303, Some("/admin/signin?out=1")));
    assert!(out.set_cookie("cms_session").unwrap().contains("Max-Age=0"));
    tab.cookies = kept;
    assert_eq!(tab.get("/admin/").status, 303, "the old cookie no longer works");

    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    assert_eq!(tab.get("/admin/").status, 200);
    let changed = passwd(site.path(), "ed@example.com", "a brand new password\n");
    assert!(changed.status.success());
    assert_eq!(tab.get("/admin/").status, 303, "a new password ends the session");
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 401);
    assert_eq!(tab.sign_in("ed@example.com", "a brand new password").status, 303);

    assert!(cms(site.path(), &["users", "remove", "--email", "ed@example.com"]).status.success());
    assert_eq!(tab.get("/admin/").status, 303, "removing the user ends the session");
    assert!(
        cms(site.path(), &["users", "add", "--email", "ed@example.com", "--role", "editor"]).status.success()
    );
    assert_eq!(tab.get("/admin/").status, 303, "adding the email again is another account");
}

#[test]
fn users_passwd_reads_one_line_from_standard_input() {
    let site = demo_site();
    let site = site.path();
    assert!(cms(site, &["users", "add", "--email", "ann@example.com", "--role", "editor"]).status.success());
    let cases = [
        ("ann@example.com", "short\n", "at least 8 characters"),
        ("ann@example.com", "", "no password"),
        ("ann@example.com", "two\nlines here\n", "one line"),
        ("nobody@example.com", "long enough password\n", "no user nobody@example.com"),
    ];
    let before = std::fs::read(site.join(".cms/users.yaml")).unwrap();
    for (email, input, needle) in cases {
        let output = passwd(site, email, input);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success() && stderr.contains(needle), "{input:?}: {stderr}");
    }
    assert_eq!(std::fs::read(site.join(".cms/users.yaml")).unwrap(), before, "nothing changed");
    let output = passwd(site, "ann@example.com", "long enough password\r\n");
    assert_eq!(stdout(&output), "set the password of ann@example.com\n");
    assert_eq!(stdout(&cms(site, &["users", "list"])), "ann@example.com editor\n");
    let changed = cms(site, &["users", "add", "--email", "ann@example.com", "--role", "admin"]);
    assert!(changed.status.success());
    let stored = std::fs::read_to_string(site.join(".cms/users.yaml")).unwrap();
    assert!(stored.contains("$argon2id$"), "a role change keeps the password: {stored}");
}

/// A multipart upload form: `csrf` (when given) first, then the folder, path and file.
fn upload_body(csrf: Option<&str>, path: &str, name: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "----cms-test-boundary";
    let mut body = Vec::new();
    let mut text = |field: &str, value: &str| {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"\r\n\r\n{value}\r\n")
                .as_bytes(),
        );
    };
    if let Some(csrf) = csrf {
        text("csrf", csrf);
    }
    text("folder", "0");
    text("path", path);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: image/png\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

impl Tab<'_> {
    fn upload(&mut self, content_type: &str, body: Vec<u8>, accept: &str) -> Answer {
        let req = self
            .agent
            .post(format!("{}/admin/media/upload", self.server.base))
            .header("Cookie", self.cookie_header())
            .header("Content-Type", content_type)
            .header("Accept", accept);
        let response = req.send(&body[..]);
        self.answer(response)
    }
}

#[test]
fn owner_pages_media_and_deletes_act_through_the_facade() {
    let site = demo_site();
    let root = site.path();
    user_with_password(root, "owner@example.com", "owner");
    let server = Server::start(root);
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();
    let csrf = csrf.as_str();

    // Webhooks: add (the secret shown once), disable, remove, clear the log.
    let bad = tab.post(
        "/admin/webhooks",
        &[("csrf", csrf), ("url", "http://plain.example/h"), ("events", "file.created")],
        &[],
    );
    assert_eq!(bad.status, 422, "{}", bad.body);
    assert!(
        bad.body.contains("https") && bad.body.contains("http://plain.example/h"),
        "the error and the input are shown"
    );
    // An internal address is refused unless the site allows them (the demo does not).
    let internal = tab.post(
        "/admin/webhooks",
        &[("csrf", csrf), ("url", "https://127.0.0.1:9/hook"), ("events", "file.created")],
        &[],
    );
    assert_eq!(internal.status, 422, "{}", internal.body);
    assert!(
        internal.body.contains("webhooks.allow_private_addresses"),
        "the setting is named: {}",
        internal.body
    );
    let added = tab.post(
        "/admin/webhooks",
        &[
            ("csrf", csrf),
            ("url", "https://hooks.example.com/hook"),
            ("events", "file.created"),
            ("events", "user.deleted"),
        ],
        &[],
    );
    assert_eq!(added.status, 200, "{}", added.body);
    assert!(added.body.contains("whsec_"), "the secret is shown once");
    let listed = stdout(&cms(root, &["webhooks", "list"]));
    assert!(listed.contains("enabled https://hooks.example.com/hook file.created,user.deleted"), "{listed}");
    let id = listed.split_whitespace().next().unwrap().to_owned();
    assert!(!tab.get("/admin/webhooks").body.contains("whsec_"), "and never again");
    let off = tab.post("/admin/webhooks/state", &[("csrf", csrf), ("id", &id), ("enabled", "false")], &[]);
    assert_eq!(off.status, 303);
    assert!(stdout(&cms(root, &["webhooks", "list"])).contains(&format!("{id} disabled")));
    assert_eq!(tab.post("/admin/webhooks/remove", &[("csrf", csrf), ("id", &id)], &[]).status, 303);
    assert_eq!(stdout(&cms(root, &["webhooks", "list"])), "");
    assert_eq!(tab.post("/admin/webhooks/log/clear", &[("csrf", csrf)], &[]).status, 303);

    // Keys of both kinds: an mcp_ key is made when asked for, listed as such; a kind that
    // does not exist is refused and nothing is made.
    let agent = tab.post(
        "/admin/keys",
        &[("csrf", csrf), ("user", "owner@example.com"), ("name", "agent"), ("kind", "mcp")],
        &[],
    );
    assert_eq!(agent.status, 200, "{}", agent.body);
    assert!(agent.body.contains("value=\"mcp_"), "the mcp_ key is shown once: {}", agent.body);
    assert!(stdout(&cms(root, &["keys", "list"])).contains("mcpkey_"));
    let keys_before = stdout(&cms(root, &["keys", "list"]));
    let odd = tab.post(
        "/admin/keys",
        &[("csrf", csrf), ("user", "owner@example.com"), ("name", "x"), ("kind", "ftp")],
        &[],
    );
    assert_eq!(odd.status, 400, "{}", odd.body);
    assert_eq!(stdout(&cms(root, &["keys", "list"])), keys_before);

    // Theme: only what the form sends changes, and the facade validates it.
    let wrong = tab.post("/admin/theme", &[("csrf", csrf), ("accent_color", "blue")], &[]);
    assert_eq!(wrong.status, 422);
    assert!(wrong.body.contains("accent_color must be"), "{}", wrong.body);
    assert_eq!(tab.post("/admin/theme", &[("csrf", csrf), ("accent_color", "#123456")], &[]).status, 303);
    let theme = tab.get("/admin/theme").body;
    assert!(theme.contains("value=\"#123456\"") && theme.contains("value=\"system-ui\""), "{theme}");

    // Users: add with a password (who can then sign in), remove.
    let user =
        [("csrf", csrf), ("email", "new@example.com"), ("role", "editor"), ("password", "a fine password")];
    assert_eq!(tab.post("/admin/users", &user, &[]).status, 303);
    assert!(stdout(&cms(root, &["users", "list"])).contains("new@example.com editor"));
    assert_eq!(Tab::new(&server).sign_in("new@example.com", "a fine password").status, 303);
    let short = tab.post(
        "/admin/users",
        &[("csrf", csrf), ("email", "x@example.com"), ("role", "editor"), ("password", "short")],
        &[],
    );
    assert_eq!(short.status, 422);
    assert!(!stdout(&cms(root, &["users", "list"])).contains("x@example.com"), "nothing was added");
    assert_eq!(tab.get("/admin/users/remove?email=new%40example.com").status, 200, "a confirmation first");
    assert_eq!(
        tab.post("/admin/users/remove", &[("csrf", csrf), ("email", "new@example.com")], &[]).status,
        303
    );
    assert!(!stdout(&cms(root, &["users", "list"])).contains("new@example.com"));

    // Media: upload (form and script), new folder, move, rename, delete.
    let png = std::fs::read(root.join("media/uploads/logo.png")).unwrap();
    let (content_type, body) = upload_body(None, "", "pic.png", &png);
    assert_eq!(tab.upload(&content_type, body, "text/html").status, 403, "the token comes first");
    let (content_type, body) = upload_body(Some(csrf), "", "pic.png", &png);
    let uploaded = tab.upload(&content_type, body, "text/html");
    assert_eq!(
        (uploaded.status, uploaded.header("location")),
        (303, Some("/admin/media?folder=0&path=&ok=uploaded"))
    );
    assert_eq!(std::fs::read(root.join("media/uploads/pic.png")).unwrap(), png);
    let (content_type, body) = upload_body(Some(csrf), "", "pic.png", &png);
    let again = tab.upload(&content_type, body, "application/json");
    assert_eq!(again.status, 200);
    assert!(
        again.body.contains("\"name\":\"pic-1.png\"") && again.body.contains("\"is_image\":true"),
        "{}",
        again.body
    );
    assert!(again.body.contains("\"variants\":[{\"name\":\"large\""), "the demo's presets: {}", again.body);
    assert!(again.body.contains("\"thumb\":\"/media/uploads/pic-1.png?w=160\""), "{}", again.body);
    let media = tab.get("/admin/media?folder=0");
    // A tile shows a small variant (the smallest of `images.sizes` from 160), not the original.
    assert!(media.body.contains("<img src=\"/media/uploads/pic.png?w=160\""), "a thumbnail: {}", media.body);
    let thumbnail = tab.get("/media/uploads/pic.png?w=160");
    assert_eq!((thumbnail.status, thumbnail.header("content-type")), (200, Some("image/png")));
    assert!(
        media.body.contains("aria-label=\"Variants of pic.png\"")
            && media.body.contains("href=\"/media/uploads/pic.png?preset=thumb&#38;v="),
        "the presets' variants are listed: {}",
        media.body
    );
    let place = [("csrf", csrf), ("folder", "0"), ("path", "")];
    let with = |more: &[(&'static str, &'static str)]| -> Vec<(&'static str, String)> {
        place.iter().chain(more).map(|(k, v)| (*k, (*v).to_owned())).collect()
    };
    let post = |tab: &mut Tab, path: &str, fields: Vec<(&str, String)>| {
        let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        tab.post(path, &fields, &[]).status
    };
    assert_eq!(post(&mut tab, "/admin/media/folder", with(&[("name", "shots")])), 303);
    assert_eq!(post(&mut tab, "/admin/media/move", with(&[("file", "pic.png"), ("dest", "shots")])), 303);
    assert!(root.join("media/uploads/shots/pic.png").is_file());
    let in_shots = vec![
        ("csrf", csrf.to_owned()),
        ("folder", "0".into()),
        ("path", "shots".into()),
        ("file", "pic.png".into()),
        ("new_name", "hero-x".into()),
    ];
    assert_eq!(post(&mut tab, "/admin/media/rename", in_shots), 303);
    assert!(root.join("media/uploads/shots/hero-x.png").is_file(), "a new name keeps the extension");
    assert_eq!(tab.get("/admin/media/delete?folder=0&path=shots&file=hero-x.png").status, 200);
    let gone = vec![
        ("csrf", csrf.to_owned()),
        ("folder", "0".into()),
        ("path", "shots".into()),
        ("file", "hero-x.png".into()),
    ];
    assert_eq!(post(&mut tab, "/admin/media/delete", gone), 303);
    assert!(!root.join("media/uploads/shots/hero-x.png").exists());
    assert_eq!(post(&mut tab, "/admin/media/move", with(&[("file", "nope.png"), ("dest", "shots")])), 404);
    assert_eq!(post(&mut tab, "/admin/media/folder", with(&[("name", "../escape")])), 400);

    // An item deleted after its confirmation keeps its history.
    let confirm = tab.get("/admin/collections/pages/items/about/delete");
    assert_eq!(confirm.status, 200);
    let etag = confirm.input("etag");
    let deleted =
        tab.post("/admin/collections/pages/items/about/delete", &[("csrf", csrf), ("etag", &etag)], &[]);
    assert_eq!(
        (deleted.status, deleted.header("location")),
        (303, Some("/admin/collections/pages?ok=deleted&undo=about.md"))
    );
    assert!(!root.join("content/pages/about.md").exists());
    assert!(root.join(".cms/versions").is_dir());
}

#[test]
fn share_preview_shows_a_link_that_opens_the_draft_without_signing_in() {
    let site = demo_site();
    user_with_password(site.path(), "ed@example.com", "editor");
    let server = Server::start(site.path());
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("ed@example.com", PASSWORD).status, 303);
    let item = "/admin/collections/blog-posts/items/2026-04-02-upcoming-release.md";
    let edit = tab.get(item);
    assert!(edit.body.contains(&format!("href=\"{item}/share\"")), "{}", edit.body);
    let confirm = tab.get(&format!("{item}/share"));
    assert_eq!(confirm.status, 200);
    let csrf = confirm.input("csrf");
    assert_eq!(tab.post(&format!("{item}/share"), &[], &[]).status, 403, "the CSRF token is checked");
    let shared = tab.post(&format!("{item}/share"), &[("csrf", &csrf)], &[]);
    assert_eq!(shared.status, 200, "{}", shared.body);
    let url = shared.input("preview-link");
    assert!(url.starts_with(&format!("{}/cms/preview/", server.base)), "{url}");
    let (status, body) = server.get(url.strip_prefix(&server.base).unwrap(), None);
    assert_eq!((status, body["data"]["slug"].as_str()), (200, Some("upcoming-release")));
}

/// The body time-out covers the editor's forms and uploads too (review finding 8): a
/// signed-in form or multipart upload whose body trickles in is answered `408` within a
/// bound, and the upload leaves nothing behind.
#[test]
fn slow_form_and_upload_bodies_are_cut_off() {
    use crate::slow_clients::{assert_ended, connect, read_until_closed, site_with_short_timeouts, trickle};
    let site = site_with_short_timeouts();
    let root = site.path();
    user_with_password(root, "owner@example.com", "owner");
    let server = Server::start(root);
    let mut tab = Tab::new(&server);
    assert_eq!(tab.sign_in("owner@example.com", PASSWORD).status, 303);
    let csrf = tab.csrf();
    let host = server.base.strip_prefix("http://").unwrap();

    let (upload_type, upload) = upload_body(Some(&csrf), "", "slow.png", &[0x89, b'P', b'N', b'G']);
    let form = format!("csrf={csrf}&accent_color=%23123456").into_bytes();
    let cases = [
        ("an upload", "/admin/media/upload", upload_type.as_str(), upload),
        ("a form", "/admin/theme", "application/x-www-form-urlencoded", form),
    ];
    let ended: Vec<_> = cases
        .into_iter()
        .map(|(case, path, content_type, body)| {
            let mut stream = connect(&server);
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: {host}\r\nCookie: {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
                tab.cookie_header(),
                body.len()
            );
            stream.write_all(head.as_bytes()).unwrap();
            let started = std::time::Instant::now();
            trickle(&stream, body);
            (case, std::thread::spawn(move || read_until_closed(&mut stream, started)))
        })
        .collect();
    for (case, ended) in ended {
        let ended = ended.join().unwrap();
        assert!(ended.0.starts_with("HTTP/1.1 408"), "{case}: answered 408, got {:?}", ended.0);
        assert_ended(case, ended, std::time::Duration::from_secs(5));
    }
    assert!(!root.join("media/uploads/slow.png").exists());
    let staged = std::fs::read_dir(root.join(".cms/uploads")).map_or(0, |dir| dir.count());
    assert_eq!(staged, 0, "the staged upload is gone");
    let theme = tab.get("/admin/theme").body;
    assert!(!theme.contains("value=\"#123456\""), "the slow form changed nothing");
}
