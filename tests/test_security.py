"""Security: loopback binding, XSRF protection, no user text as HTML or markdown, pinned deps.

- The server binds to 127.0.0.1 by default (.streamlit/config.toml; the Makefile says it again):
  a live server started without an address flag listens on 127.0.0.1 only (/proc/net/tcp{,6}).
- XSRF protection is on in the config, and the live server refuses an upload without the token
  (403 "XSRF token missing or invalid", Streamlit's upload handler).
- No st.html / components.html / unsafe_allow_html in the app; hostile text typed by a user
  (scenario name, engagement, uploaded config.json model name, uploaded file name, a link value)
  reaches the page escaped: never as an HTML tag, a markdown image or link, or a :directive:.
- requirements*.txt pin every direct dependency (==); constraints.txt pins the whole resolved set
  and ``make setup`` installs with it.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.catalog.user_data import ENV_VAR
from advisor.scenario import Scenario, dump_scenario
from advisor.store import Store
from tests.app_server import free_port, running_app

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
HOSTILE = "<img src=x onerror=alert(1)>"
MD_HOSTILE = "![t](http://evil.example/t.png) [c](javascript:alert(1)) :red[x] $x$"
APP_FILES = [ROOT / "app.py", *ROOT.glob("app_*.py"), *ROOT.glob("ui/pages/*.py")]
#: Unescaped forms that would render as HTML, an image, a link or a colour directive.
RAW = [
    re.compile(r"(?<!\\)<img"),
    re.compile(r"(?<!\\)<script"),
    re.compile(r"(?<!\\)!(?<!\\)\[t"),
    re.compile(r"(?<!\\)\[c(?<!\\)\]"),
    re.compile(r"(?<!\\):red(?<!\\)\["),
]


# -- configuration ---------------------------------------------------------------------------
def _config() -> dict:
    return tomllib.loads((ROOT / ".streamlit/config.toml").read_text())


def test_config_binds_loopback_and_keeps_xsrf_on():
    server = _config()["server"]
    assert server["address"] == "127.0.0.1"
    assert server["enableXsrfProtection"] is True
    assert server.get("enableCORS", True) is True  # Streamlit turns XSRF off with CORS off
    assert server["maxUploadSize"] <= 2  # MB: the config.json/scenario upload cap


def test_makefile_runs_on_loopback():
    out = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    run_line = next(line for line in out.splitlines() if "streamlit run" in line)
    assert "--server.address 127.0.0.1" in run_line
    assert "0.0.0.0" not in (ROOT / "Makefile").read_text()
    assert "enableXsrfProtection false" not in (ROOT / "Makefile").read_text()


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as in /proc/net/tcp{,6}) of LISTEN sockets on ``port``."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(name).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            local, _, state = line.split()[1:4]
            addr, p = local.split(":")
            if state == "0A" and int(p, 16) == port:
                found.append(addr)
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app as `streamlit run app.py` with only a port: address and XSRF from config.toml."""
    if not Path("/proc/net/tcp").exists():
        pytest.skip("needs Linux /proc/net/tcp")
    port = free_port()
    with running_app(tmp_path_factory.mktemp("ia-sec"), port=port, timeout_s=30, flags=()):
        yield port


def test_server_listens_on_loopback_only(server):
    addrs = _listening(server)
    assert addrs, "no listening socket found"
    # 0100007F = 127.0.0.1 (little-endian hex); 00000000 or all-zero tcp6 = every interface.
    assert set(addrs) == {"0100007F"}, addrs
    # And it is not reachable on another local address of this machine (when there is one).
    try:
        other = socket.gethostbyname(socket.gethostname())
    except OSError:
        other = "127.0.0.1"
    if not other.startswith("127."):
        with socket.socket() as s, pytest.raises(OSError):
            s.settimeout(2)
            s.connect((other, server))


def test_server_refuses_upload_without_xsrf_token(server):
    req = urllib.request.Request(
        f"http://127.0.0.1:{server}/_stcore/upload_file/some-session/some-file",
        data=b"--x\r\nContent-Disposition: form-data; name=file; filename=a.json\r\n\r\n{}\r\n--x--",
        method="PUT", headers={"Content-Type": "multipart/form-data; boundary=x"},
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 403
    assert "XSRF" in err.value.read().decode()


# -- no user text as HTML ----------------------------------------------------------------------
def test_no_raw_html_rendering_in_app_code():
    pattern = re.compile(r"unsafe_allow_html\s*=\s*True|st\.html\(|components\.(v1\.)?html|iframe")
    hits = [
        f"{p.relative_to(ROOT)}:{i}: {line.strip()}"
        for p in APP_FILES
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not hits, hits


def _texts(at: AppTest) -> list[str]:
    """Everything the page renders as markdown: text elements, alerts, headings, labels, help."""
    out: list[str] = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "title", "header",
                 "subheader"):  # fmt: skip
        out += [str(x.value) for x in getattr(at, kind)]
    for kind in ("button", "text_input", "selectbox", "multiselect", "number_input", "radio"):
        for w in getattr(at, kind):
            out += [str(getattr(w, "label", "")), str(getattr(w, "help", "") or "")]
    return out


def _assert_escaped(at: AppTest, *needles: str) -> None:
    assert not at.exception, at.exception[0].message if at.exception else ""
    for el in list(at.markdown) + list(at.caption):
        assert not el.proto.allow_html, el.value  # never rendered as HTML
    texts = _texts(at)
    for rx in RAW:
        bad = [t for t in texts if rx.search(t)]
        assert not bad, bad
    for needle in needles:  # the text is shown (escaped), not dropped
        assert any(needle in t for t in texts), needle


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "data"))
    return tmp_path / "data"


def test_hostile_scenario_and_engagement_names_are_escaped(data_dir):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("ui/pages/scenarios.py").run()
    at.text_input(key="sc.new_engagement").input(HOSTILE).run()
    at.button[[b.label for b in at.button].index("Add")].click().run()
    at.text_input(key="sc.name").input(MD_HOSTILE[:150]).run()
    at.button(key="sc.save").click().run()
    _assert_escaped(at, r"\<img src=x onerror=alert\(1\)\>", r"\!\[t\]")
    assert Store(data_dir / "scenarios.sqlite3").engagements()[-1] == HOSTILE  # stored as typed
    # The saved row, its load message and the rename expander.
    at.button(key="sc.load.0").click().run()
    _assert_escaped(at, r"\!\[t\]")


def test_hostile_uploaded_model_name_is_plain_on_every_page(data_dir):
    cfg = json.loads((ROOT / "tests/fixtures/hf/llama-3.1-8b.json").read_text())
    cfg["_name_or_path"] = HOSTILE + " " + MD_HOSTILE
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.sidebar.file_uploader[0].set_value((HOSTILE + ".json", json.dumps(cfg).encode(), "application/json")).run()  # fmt: skip
    assert at.session_state["scenario"].model_config_json is not None  # the upload is in use
    name = at.session_state["scenario"].model_spec().name
    assert "<" not in name and "[" not in name and ":" not in name and "$" not in name
    for page in ("overview", "memory", "latency", "interconnect", "speculative", "recommendation"):
        at.switch_page(f"ui/pages/{page}.py").run()
        _assert_escaped(at)


def test_hostile_uploaded_scenario_file_is_escaped(data_dir):
    doc = dump_scenario(Scenario(name=MD_HOSTILE)).encode()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("ui/pages/scenarios.py").run()
    up = next(u for u in at.file_uploader if u.key == "sc.upload")
    up.set_value((HOSTILE + ".json", doc, "application/json")).run()
    _assert_escaped(at, r"\<img src=x onerror=alert\(1\)\>\.json", r"\!\[t\]")
    broken = next(u for u in at.file_uploader if u.key == "sc.upload")
    broken.set_value((HOSTILE + ".json", b'{"name": "' + HOSTILE.encode(), "application/json"))
    at.run()
    _assert_escaped(at, r"\<img")


def test_hostile_pdf_client_name_is_not_rendered_as_html(data_dir):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_input(key="pdf_client").input(HOSTILE).run()
    at.text_input(key="pdf_consultant").input(MD_HOSTILE[:150]).run()
    _assert_escaped(at)


def test_hostile_link_values_are_escaped_in_the_warning(data_dir):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["g"] = HOSTILE
    at.query_params["m"] = MD_HOSTILE
    at.run()
    assert any("link were ignored" in w.value for w in at.warning)
    _assert_escaped(at, r"\<img", r"\!\[t\]")


# -- pinned dependencies -------------------------------------------------------------------------
PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]+\])?==[0-9][^\s;=]*(\s*;.*)?$")


def _reqs(name: str) -> dict[str, str]:
    out = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#") or line.startswith("-r "):
            continue
        assert PIN.match(line), f"{name}: not pinned with ==: {line!r}"
        pkg, ver = line.split(";")[0].split("==")
        out[re.sub(r"[-_.]+", "-", pkg.split("[")[0]).lower()] = ver.strip()
    return out


def test_every_direct_dependency_is_pinned_and_locked():
    direct = {**_reqs("requirements.txt"), **_reqs("requirements-dev.txt")}
    assert {"streamlit", "plotly", "pydantic", "pytest"} <= set(direct)
    lock = _reqs("constraints.txt")
    for pkg, ver in direct.items():
        assert lock.get(pkg) == ver, (
            f"constraints.txt has {pkg} {lock.get(pkg)}, requirements {ver}"
        )
    assert len(lock) > len(direct)  # transitive dependencies pinned too
    assert {"starlette", "protobuf", "tornado", "uvicorn"} & set(lock)  # the web stack


def test_make_setup_installs_with_the_constraints():
    out = subprocess.run(
        ["make", "-n", "-B", "setup", "VENV=/nonexistent-venv"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    install = " ".join(out.split("\\\n"))
    assert "-r requirements-dev.txt" in install and "-c constraints.txt" in install
