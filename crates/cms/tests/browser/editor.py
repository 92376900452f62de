"""Shared helpers of the editor's browser scripts (Chromium by Selenium).

A script imports it (`from editor import *`) and gets a started `driver`, a `wait`, and the
steps every script needs: sign in, find and fill, screenshots, axe-core at a width, the
browser console check. The environment (set by `crates/cms/tests/it/admin_browser.rs`
`run_script`):

  CMS_BASE              the server, e.g. http://127.0.0.1:40123
  CMS_OWNER, CMS_EDITOR emails of an owner and an editor; CMS_PASSWORD their password
  CMS_AXE_JS            axe-core's axe.min.js
  CMS_SCREENSHOTS       a folder for screenshots (optional)
  CMS_CHROMIUM, CMS_CHROMEDRIVER  the browser and its driver (default: Debian's paths)
"""

import json
import os
import time

from selenium import webdriver
from selenium.common.exceptions import SessionNotCreatedException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

BASE = os.environ["CMS_BASE"].rstrip("/")
OWNER = os.environ.get("CMS_OWNER", "owner@example.com")
EDITOR = os.environ.get("CMS_EDITOR", "editor@example.com")
PASSWORD = os.environ["CMS_PASSWORD"]
SHOTS = os.environ.get("CMS_SCREENSHOTS", "")
AXE_JS = os.environ.get("CMS_AXE_JS", "")
STARTED = time.monotonic()


def step(name):
    print(f"[{time.monotonic() - STARTED:5.1f} s] {name}", flush=True)


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CMS_CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--hide-scrollbars", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Chromium started beside other browsers on a busy machine now and then fails to come up
    # ("session not created"); a second start is then a fresh process, not the same failure.
    for attempt in range(3):
        service = Service(executable_path=os.environ.get("CMS_CHROMEDRIVER", "/usr/bin/chromedriver"))
        try:
            started = webdriver.Chrome(options=options, service=service)
            break
        except SessionNotCreatedException as error:
            if attempt == 2:
                raise
            print(f"the browser did not start ({error.msg}); starting it again", flush=True)
    started.set_script_timeout(60)
    return started


driver = browser()
# Generous: a wait ends as soon as its condition holds, and two cores may be running other
# browsers and servers beside this one.
wait = WebDriverWait(driver, 30)


def go(path):
    driver.get(BASE + path)


def find(css):
    return wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))


def text_of(css):
    return find(css).text


def notice():
    return text_of("p.notice")


def fill(css, text):
    field = find(css)
    field.clear()
    field.send_keys(text)
    return field


def sign_in(email=OWNER):
    go("/admin/")
    fill("input[name=email]", email)
    fill("input[name=password]", PASSWORD + Keys.ENTER)
    wait.until(EC.presence_of_element_located((By.ID, "sign-out")))


def active_id():
    return driver.execute_script("return document.activeElement && document.activeElement.id")


def console(expected=()):
    """Fails on any error the browser logged since the last call, but those expected."""
    errors = [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
    unexpected = [m for m in errors if not any(e in m for e in expected)]
    assert not unexpected, f"browser console errors: {unexpected}"


def shot(name, width=1280):
    """A screenshot of the whole page at `width`, when CMS_SCREENSHOTS names a folder."""
    if not SHOTS:
        return
    driver.set_window_size(width, 900)
    height, chrome = driver.execute_script(
        "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight]")
    driver.set_window_size(width, min(max(height, 600), 2000) + chrome)
    driver.save_screenshot(os.path.join(SHOTS, f"{name}.png"))
    driver.set_window_size(1280, 900)


def axe(where, width=1280, serious_only=False):
    """axe-core (WCAG 2.1 A and AA and best practices) on the whole page at `width`: no
    violation (with `serious_only`, none serious or critical)."""
    assert AXE_JS, "CMS_AXE_JS names axe-core's axe.min.js"
    driver.set_window_size(width, 900)
    with open(AXE_JS, encoding="utf-8") as source:
        driver.execute_script(source.read())
    result = driver.execute_async_script(
        """
        const done = arguments[arguments.length - 1];
        axe.run(document, { resultTypes: ["violations"] }).then(
          (result) => done({
            passed: result.passes.length,
            violations: result.violations.map((v) => ({
              id: v.id, impact: v.impact, help: v.help,
              nodes: v.nodes.map((n) => n.target.join(" ")),
            })),
          }),
          (error) => done({ passed: 0, violations: [{ id: "axe-error", impact: "critical", help: String(error), nodes: [] }] }),
        );
        """
    )
    driver.set_window_size(1280, 900)
    found = result["violations"]
    if serious_only:
        found = [v for v in found if v["impact"] in ("serious", "critical")]
    assert not found, f"axe-core on {where} at {width} px: {json.dumps(found, indent=2)}"
    assert result["passed"] > 10, f"axe-core ran only {result['passed']} rules on {where}"


def finish(run):
    """Runs the script's steps; on failure prints the page and keeps a screenshot."""
    try:
        run()
        console()
        step("done")
    except Exception:
        print("at", driver.current_url)
        print(driver.page_source[:4000])
        if SHOTS:
            driver.save_screenshot(os.path.join(SHOTS, "failure.png"))
        raise
    finally:
        driver.quit()
