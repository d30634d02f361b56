"""Secrets planted wherever a user could put one never come out, in any form they take on the way: not
in any file a command writes, not on stdout or stderr. Places: target spec parameters, URL userinfo
(sent as `Authorization: Basic base64(user:password)`), keys from the environment; a (fake) server
echoes every request header, and the credentials it decoded, in its 401 bodies and in the fields of its
successful answers. Commands: quality (--generate too), evaluate, datasets check, identity, doctor,
load, meter, report."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from bench.core.errors import ServerError, UserError
from bench.core.http import auth_headers
from bench.core.secrets import mask, register_secret, secret_from_env
from bench.endpoints.meter import Meter
from bench.targets import registry
from tests.harness.cli import run_cli
from tests.harness.stubs import JsonStub, RawBody, Seen, Whole

ROOT = Path(__file__).resolve().parents[2]
ENV_SECRET = "envsecret-3f9a1c77"
URL_SECRET = "urlsecret!77ab0d"  # written percent-encoded in a URL: urlsecret%2177ab0d
URL_PASSWORD = quote(URL_SECRET, safe="")
PARAM_SECRET = "paramsecret-91cd2e"
TOKEN_SECRET = "tokensecret-55ef8a"
BASIC = base64.b64encode(f"alice:{URL_SECRET}".encode()).decode()  # what `Authorization: Basic` carries
SECRETS = (ENV_SECRET, URL_SECRET, URL_PASSWORD, PARAM_SECRET, TOKEN_SECRET, BASIC)
CHAT_ANSWERS = 3  # the echo server's chat route answers this many questions, then refuses (401) every other


class EchoServer:
    """Echoes every request header, and the Basic credentials it decoded, wherever it can: in a 401 body for
    every route, and in the fields its successful answers carry into results (TEI's /info model_id, /embed;
    the first CHAT_ANSWERS chat answers). On loopback: the credentials travel as a client sends them."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self.auth: list[str] = []  # each request's Authorization header
        self.chat_answers = 0
        self.stub = JsonStub({}, default=Whole(self._echo))

    def _echo(self, seen: Seen) -> tuple[int, object]:
        self.requests.append(seen.path)
        auth = seen.headers.get("Authorization", "")
        self.auth.append(auth)
        decoded = base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else ""
        said = (
            f"{seen.path}; headers were {dict(seen.headers)}; credentials {decoded!r}; raw {seen.headers.as_string()!r}"
        )
        route = seen.path.split("?")[0]
        if seen.method == "GET" and route == "/info":
            return 200, {
                "model_id": f"echo-model {said}",
                "model_dtype": "float32",
                "version": said,
                "model_type": {"embedding": {"pooling": "mean"}},
                "max_client_batch_size": 32,
                "max_input_length": 512,
                "auto_truncate": True,
            }
        if route == "/embed":
            return 200, [[1.0, 0.5, 0.25] for _ in seen.json()["inputs"]]
        if route == "/v1/chat/completions" and self.chat_answers < CHAT_ANSWERS:
            self.chat_answers += 1
            return 200, {
                "choices": [{"message": {"role": "assistant", "content": f"unknown; {said}"}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
            }
        return 401, {"error": {"message": f"unauthorized: {said}", "type": "auth"}}

    def url(self, credentials: bool = True) -> str:
        return f"http://{f'alice:{URL_PASSWORD}@' if credentials else ''}127.0.0.1:{self.stub.server_address[1]}"


@pytest.fixture
def echo():
    server = EchoServer()
    yield server
    server.stub.stop()


@pytest.fixture
def echo_url(echo):
    return echo.url()


@pytest.fixture
def env_keys(monkeypatch):
    for name in ("OPENWEBUI_API_KEY", "TEI_KEY", "TEI_API_KEY", "LIGHTRAG_API_KEY", "LITELLM_API_KEY"):
        monkeypatch.setenv(name, ENV_SECRET)


class EchoingTarget:
    """Accepts any parameter (so a secret-bearing spec reaches the results) and fails the way a server
    that echoes its key would."""

    def __init__(self, spec, options):
        self.name = spec.name
        self.key = secret_from_env("OPENWEBUI_API_KEY")  # as every target reads its key

    def prepare(self, dataset, progress):
        self.docs = list(dataset.corpus)

    def search(self, queries, depth, progress):
        raise ServerError("echo", f"refused Authorization: Bearer {self.key} (token {self.key})")

    def describe(self):
        return {}

    def close(self):
        pass


def assert_clean(*texts: str, folder: Path | None = None) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text, f"{secret} in output:\n{text}"
    for path in folder.rglob("*") if folder else []:
        if path.is_file():
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, f"{secret} in {path}"


def written(folder: Path, *names: str) -> None:
    """Each sink exists (so that `assert_clean` read it)."""
    for name in names:
        assert (folder / name).is_file(), f"no {name} in {folder}"


@pytest.fixture(scope="module")
def tiny_qa(tmp_path_factory) -> Path:
    """Five questions with reference answers (what --generate scores), over a five-document corpus."""
    root = tmp_path_factory.mktemp("tiny_qa")
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "text": f"passage {i} says {i}"}) + "\n" for i in range(5))
    )
    (root / "qa.jsonl").write_text(
        "".join(
            json.dumps({"id": f"q{i}", "query": f"what does passage {i} say", "answers": [str(i)]}) + "\n"
            for i in range(5)
        )
    )
    return root


def test_quality_with_secrets_in_specs_urls_and_echoed_keys(tiny, tmp_path, echo, env_keys, monkeypatch, capsys):
    monkeypatch.setitem(registry.TARGET_FACTORIES, "echo", EchoingTarget)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        [
            "quality",
            "--dataset",
            str(tiny),
            "--out",
            str(out),
            "-m",
            "P@2",
            "--depth",
            "4",
            "-t",
            f"echo@{echo.url()}?api_key={PARAM_SECRET}&token={TOKEN_SECRET}",
        ],
        monkeypatch,
        capsys,
    )
    assert code == 2 and stderr.count("\n") == 1 and "refused Authorization: Bearer ***" in stderr
    assert (out / "report.html").exists() and "echo" in (out / "results.jsonl").read_text()
    assert_clean(stdout, stderr, folder=out)

    # The real HTTP layer: Open WebUI's client against a server that echoes the key it was sent.
    out2 = tmp_path / "out2"
    code, stdout, stderr = run_cli(
        [
            "quality",
            "--dataset",
            str(tiny),
            "--out",
            str(out2),
            "-m",
            "P@2",
            "--depth",
            "4",
            "-t",
            f"openwebui@{echo.url(credentials=False)}",
        ],
        monkeypatch,
        capsys,
    )
    assert code == 2 and "HTTP 401" in stderr and "Bearer ***" in stderr, stderr
    assert_clean(stdout, stderr, folder=out2)

    # A spec parameter a target does not take: refused before anything is written, the value masked.
    code, stdout, stderr = run_cli(
        ["quality", "--dataset", str(tiny), "--out", str(tmp_path / "out3"), "-t", f"bm25?api_key={PARAM_SECRET}"],
        monkeypatch,
        capsys,
    )
    assert code == 2 and "api_key=***" in stderr and not (tmp_path / "out3").exists()
    assert_clean(stdout, stderr)


@pytest.mark.parametrize(
    "command",
    [
        ["quality", "--dataset", "{tiny}", "-t", "openwebui@{url}", "--out", "{tmp}/q"],
        ["identity", "-e", "a=openai@{url}/v1?model=m&key_env=TEI_KEY", "-e", "b=reference", "--texts", "{texts}"],
        ["load", "-e", "a=tei@{url}?key_env=TEI_KEY", "--out", "{tmp}/l"],
        ["doctor", "--tei", "{url}"],
    ],
)
def test_credentials_in_the_url_and_a_key_are_refused_before_anything_is_sent(
    command, tiny, tmp_path, echo, env_keys, monkeypatch, capsys
):
    """Both would be the Authorization header, and one would silently replace the other: one line, exit 2,
    nothing sent, nothing written."""
    texts = tmp_path / "texts.txt"
    texts.write_text("one\n")
    args = [a.format(tiny=tiny, url=echo.url(), tmp=tmp_path, texts=texts) for a in command]
    code, stdout, stderr = run_cli(args, monkeypatch, capsys)
    assert code == 2 and stderr.count("\n") == 1 and "give one of them" in stderr, stderr
    assert echo.requests == [] and not (tmp_path / "q").exists() and not (tmp_path / "l").exists()
    assert_clean(stdout, stderr)


def test_generate_with_url_credentials_masks_every_sink(tiny_qa, tmp_path, echo, monkeypatch, capsys):
    """The chat server echoes the Basic header and the credentials in its first answers and in its 401s."""
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        [
            "quality",
            "--dataset",
            str(tiny_qa),
            "-t",
            "bm25",
            "--out",
            str(out),
            "-m",
            "EM",
            "--generate",
            f"chat@{echo.url()}/v1?model=reader&context=1",
        ],
        monkeypatch,
        capsys,
    )
    assert code == 3 and "2 of 5 generated answers failed" in stderr, stderr
    written(out, "results.jsonl", "report.md", "report.html", "per_query.csv")
    queries = [r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines()) if r["record"] == "query"]
    assert [bool(q["answer"]) for q in queries] == [True] * CHAT_ANSWERS + [False] * 2
    assert all("Basic ***" in (q["answer"] or q["answer_error"]) for q in queries)  # every echo, no credentials
    assert "Basic ***" in (out / "per_query.csv").read_text()
    assert_clean(stdout, stderr, folder=out)


def test_generate_refused_with_url_credentials_masks_every_sink(tiny_qa, tmp_path, echo, monkeypatch, capsys):
    echo.chat_answers = CHAT_ANSWERS  # every question refused, with the echo in each 401 body
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        [
            "quality",
            "--dataset",
            str(tiny_qa),
            "-t",
            "bm25",
            "--out",
            str(out),
            "-m",
            "EM",
            "--generate",
            f"chat@{echo.url()}/v1?model=reader",
        ],
        monkeypatch,
        capsys,
    )
    assert code == 2 and "HTTP 401" in stderr and "Basic ***" in stderr and "credentials in the URL" in stderr, stderr
    written(out, "results.jsonl", "report.md", "report.html")
    assert_clean(stdout, stderr, folder=out)


def test_load_preflight_with_url_credentials_masks_every_sink(tmp_path, echo, monkeypatch, capsys):
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        ["load", "-e", f"a=openai@{echo.url()}/v1?model=m", "--out", str(out), "--duration", "1"], monkeypatch, capsys
    )
    assert code == 2 and "HTTP 401" in stderr and "Basic ***" in stderr, stderr
    assert not out.exists()  # the preflight is refused before --out is touched
    assert_clean(stdout, stderr, folder=tmp_path)
    # TEI's route answers: the run is written (its URL holds the credentials), and no form of them is in it.
    code, stdout, stderr = run_cli(
        ["load", "-e", f"a=tei@{echo.url()}", "--out", str(out), "--duration", "0.5", "--warmup", "0s"],
        monkeypatch,
        capsys,
    )
    assert code == 0, stderr
    written(out, "results.jsonl", "report.md", "report.html")
    assert_clean(stdout, stderr, folder=out)


def test_report_masks_secrets_in_a_results_file(tiny, tmp_path, echo_url, env_keys, monkeypatch, capsys):
    out = tmp_path / "out"
    assert (
        run_cli(
            ["quality", "--dataset", str(tiny), "--out", str(out), "-t", "bm25", "-m", "P@2", "--depth", "4"],
            monkeypatch,
            capsys,
        )[0]
        == 0
    )
    # A results file written by hand or by an older ragbench, with secrets in it.
    lines = (out / "results.jsonl").read_text().splitlines()
    target = json.loads(lines[1])
    target["spec"] = f"bm25@{echo_url}?api_key={PARAM_SECRET}"
    target["config"] = {"token": TOKEN_SECRET, "url": echo_url}
    lines[1] = json.dumps(target)
    end = json.loads(lines[-1])
    end.update(status="failed", error=f"HTTP 401: Authorization: Bearer {ENV_SECRET}")
    lines[-1] = json.dumps(end)
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "results.jsonl").write_text("\n".join(lines) + "\n")
    code, stdout, stderr = run_cli(
        ["report", str(planted / "results.jsonl"), "--out", str(tmp_path / "rep")], monkeypatch, capsys
    )
    assert code == 0, stderr
    assert "Status: failed" in (tmp_path / "rep" / "report.md").read_text()
    assert_clean(stdout, stderr, folder=tmp_path / "rep")


def test_evaluate_and_datasets_check_mask_secrets_in_paths(tmp_path, monkeypatch, capsys):
    code, stdout, stderr = run_cli(
        ["evaluate", f"http://alice:{URL_PASSWORD}@host/qrels", str(tmp_path / "run")], monkeypatch, capsys
    )
    assert code == 2 and "alice" not in stderr
    assert_clean(stdout, stderr)
    code, stdout, stderr = run_cli(["datasets", "check", f"{tmp_path}/set?token={TOKEN_SECRET}"], monkeypatch, capsys)
    assert code == 2 and "token=***" in stderr
    assert_clean(stdout, stderr)


def test_identity_masks_url_credentials_and_echoed_keys(tmp_path, echo, env_keys, monkeypatch, capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text("one\ntwo\nthree\n")
    # Both answer (TEI's /info echoes the headers into the model id that results and reports show).
    out = tmp_path / "ok"
    code, stdout, stderr = run_cli(
        [
            "identity",
            "-e",
            f"a=tei@{echo.url()}",
            "-e",
            f"b=tei@{echo.url()}",
            "--texts",
            str(texts),
            "--out",
            str(out),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 1 and "verdict: INSUFFICIENT DATA" in stdout, stdout + stderr  # three texts: too few to judge
    written(out, "results.jsonl", "report.md", "report.html")
    assert "Basic ***" in (out / "results.jsonl").read_text()
    assert_clean(stdout, stderr, folder=out)
    # One is refused, with the headers in its 401 body; the other sends the key from the environment.
    code, stdout, stderr = run_cli(
        [
            "identity",
            "-e",
            f"a=openai@{echo.url()}/v1?model=m",
            "-e",
            f"b=openai@{echo.url(credentials=False)}/v1?model=m&key_env=TEI_KEY",
            "--texts",
            str(texts),
            "--out",
            str(tmp_path / "refused"),
        ],
        monkeypatch,
        capsys,
    )
    assert code == 2 and "HTTP 401" in stderr and "Basic ***" in stderr, stderr
    assert_clean(stdout, stderr, folder=tmp_path)


def test_doctor_masks_url_credentials_and_echoed_keys(tmp_path, echo, env_keys, monkeypatch, capsys):
    for name in ("TEI_API_KEY", "LITELLM_API_KEY"):  # these hops authenticate with the URL's credentials
        monkeypatch.delenv(name)
    for out in (tmp_path / "doctor", tmp_path / "doctor.json"):
        code, stdout, stderr = run_cli(
            [
                "doctor",
                "--tei",
                echo.url(),
                "--openwebui",
                echo.url(credentials=False),
                "--litellm",
                echo.url(),
                "--lightrag",
                echo.url(),
                "--out",
                str(out),
            ],
            monkeypatch,
            capsys,
        )
        assert code == 1 and "127.0.0.1" in stdout and "Basic ***" in stdout, stdout + stderr
    written(tmp_path / "doctor", "results.jsonl", "report.md", "report.html")
    assert_clean(stdout, stderr, folder=tmp_path)


def test_meter_masks_upstream_credentials(echo_url, env_keys):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", "meter", "--port", "0", "--upstream", f"llm={echo_url}/v1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first = proc.stdout.readline()  # the route line: the proxy is up
        assert "127.0.0.1" in first
        proc.send_signal(subprocess.signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "ragbench: interrupted (SIGINT)" in stderr
    assert "(the URL's credentials replace the client's Authorization)" in first
    assert_clean(first + stdout, stderr)


def test_meter_authenticates_upstream_with_the_url_credentials(echo):
    """The client's own Authorization (LightRAG always sends one, often a dummy key) does not silently
    override the credentials the meter's upstream URL was given: they win, as `ragbench meter` says."""
    with Meter({"llm": f"{echo.url()}/v1"}) as meter:
        reply = httpx.post(f"{meter.url}/llm/chat/completions", json={}, headers={"Authorization": "Bearer dummy-key"})
    assert reply.status_code == 200 and echo.auth == [f"Basic {BASIC}"]


def test_auth_headers_turn_url_credentials_into_basic_and_register_every_form():
    url, headers = auth_headers("endpoint a", "http://bob:p%40ss%2Fw0rd-9@127.0.0.1:8080/v1")
    token = base64.b64encode(b"bob:p@ss/w0rd-9").decode()
    assert url == "http://127.0.0.1:8080/v1" and headers == {"Authorization": f"Basic {token}"}
    for form in (token, "p@ss/w0rd-9", "p%40ss%2Fw0rd-9", "p%40ss/w0rd-9", json.dumps(f"{token}")[1:-1]):
        assert mask(f"echoed: {form}.") == "echoed: ***.", form
    # A key in its own header goes with the URL's credentials; in Authorization it would replace them.
    assert auth_headers("t", "http://bob:pw@h", "k3y-value", key_header="X-API-Key")[1] == {
        "Authorization": f"Basic {base64.b64encode(b'bob:pw').decode()}",
        "X-API-Key": "k3y-value",
    }
    with pytest.raises(UserError, match=r"endpoint a: the URL holds credentials .* and key_env=K is set"):
        auth_headers("endpoint a", "http://bob:pw@h", "k3y-value", key_name="key_env=K")
    assert auth_headers("endpoint a", "http://h:1/v1", "k3y-value") == (
        "http://h:1/v1",
        {"Authorization": "Bearer k3y-value"},
    )


def test_mask_removes_derived_forms_and_basic_credentials_by_shape():
    register_secret('s"cr\\et é/x')
    for form in (
        's"cr\\et é/x',
        "s%22cr%5Cet%20%C3%A9%2Fx",
        "s%22cr%5Cet%20%C3%A9/x",
        "s%22cr%5Cet+%C3%A9%2Fx",
        's\\"cr\\\\et \\u00e9/x',
        's\\"cr\\\\et é/x',
    ):
        assert mask(f"<{form}>") == "<***>", form
    # A Basic header ragbench never sent (so never registered), written or echoed as a dict: masked by shape.
    never = base64.b64encode(b"carol:unregistered-pw").decode()
    assert never not in mask(f"Authorization: Basic {never}")
    assert never not in mask(f"{{'Authorization': 'Basic {never}'}}")
    assert never not in mask(f"auth was Basic {never} here")
    # Not the word in prose, nor base64 that is not user:password.
    assert mask("a basic setup; Basic configuration") == "a basic setup; Basic configuration"
    assert mask("Basic YWJjZGVm") == "Basic YWJjZGVm"


def test_the_load_generator_sends_what_the_api_client_sends():
    """URL credentials reach the load sweep's own HTTP client as the same Basic header, and no URL it writes
    on the wire carries them."""
    from bench.endpoints.spec import open_endpoint, parse_endpoint_spec
    from bench.load.endpoint import LoadEndpoint

    spec = parse_endpoint_spec("a=openai@http://bob:pw@127.0.0.1:9/v1?model=m")
    endpoint = LoadEndpoint(spec)
    client = open_endpoint(spec)
    try:
        assert endpoint.headers == {"Authorization": f"Basic {base64.b64encode(b'bob:pw').decode()}"}
        assert (
            endpoint.wire.url == "http://127.0.0.1:9/v1/embeddings"
            and endpoint.metrics.url == "http://127.0.0.1:9/metrics"
        )
        assert client.http.http.httpx.headers["Authorization"] == endpoint.headers["Authorization"]
    finally:
        client.close()


ODD_SECRET = 'pä/ss&w"0rd-7'  # non-ASCII, a slash, HTML- and JSON-special characters


ODD_FORMS = {  # how servers and frameworks echo a credential back
    "JSON \\u escapes in upper case (Java, Go)": 'p\\u00E4/ss&w\\"0rd-7',
    "JSON with escaped slashes (PHP)": 'p\\u00e4\\/ss&w\\"0rd-7',
    "percent-encoded, lower-case hex": "p%c3%a4%2fss%26w%220rd-7",
    "HTML-escaped (an error page)": "pä/ss&amp;w&quot;0rd-7",
    "base64 of the password alone": base64.b64encode(ODD_SECRET.encode()).decode(),
    "base64 without padding": base64.b64encode(ODD_SECRET.encode()).decode().rstrip("="),
}


@pytest.mark.parametrize("form", list(ODD_FORMS.values()), ids=list(ODD_FORMS))
def test_every_form_a_server_echoes_a_secret_in_is_masked(form):
    register_secret(ODD_SECRET)
    assert ODD_SECRET[3:9] not in mask(f"refused [{form}]") and mask(f"refused [{form}]") == "refused [***]", form


def odd_echo(form: str) -> Whole:
    """Refuses every request with the Basic password it decoded, in the form `form` names."""

    def refuse(seen: Seen) -> tuple[int, RawBody]:
        password = base64.b64decode(seen.headers.get("Authorization", "Basic ")[6:]).decode().partition(":")[2]
        written = {
            "upper": lambda p: re.sub(r"\\u[0-9a-f]{4}", lambda m: "\\u" + m.group(0)[2:].upper(), json.dumps(p)[1:-1]),
            "lower-percent": lambda p: re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), quote(p, safe="")),
        }[form](password)
        payload = json.dumps({"error": f"bad password [{written}]", "error_type": "Unauthorized"}, ensure_ascii=False)
        return 401, RawBody("application/json", payload.encode())  # ensure_ascii=False: the raw UTF-8 echoed

    return Whole(refuse)


@pytest.mark.parametrize("form", ["upper", "lower-percent"])
def test_identity_masks_a_password_echoed_in_an_odd_encoding(form, tmp_path, monkeypatch, capsys):
    server = JsonStub({}, default=odd_echo(form))
    texts = tmp_path / "texts.txt"
    texts.write_text("one\ntwo\nthree\n")
    try:
        url = f"http://bob:{quote('Zq-pässwörd-77', safe='')}@127.0.0.1:{server.server_address[1]}"
        code, stdout, stderr = run_cli(
            [
                "identity",
                "-e",
                f"a=tei@{url}",
                "-e",
                f"b=tei@{url}",
                "--texts",
                str(texts),
                "--out",
                str(tmp_path / "out"),
            ],
            monkeypatch,
            capsys,
        )
    finally:
        server.stop()
    assert code == 2 and "bad password [***]" in stderr, stderr
    for part in ("Zq-p", "w%C3%B6rd", "w%c3%b6rd", "w\\u00F6rd", "w\\u00f6rd"):
        assert part not in stdout + stderr, part


@pytest.mark.parametrize("password", ["SeKr1t/99", "SeKr1t#99"])
@pytest.mark.parametrize("command", [["load", "--duration", "0.2s"], ["doctor"]])
def test_a_password_that_breaks_its_url_is_masked_in_the_error(password, command, tmp_path, monkeypatch, capsys):
    """An unescaped `/` or `#` in the password: the URL cannot be parsed, and the line that says so names it masked."""
    url = f"http://bob:{password}@127.0.0.1:9"
    args = (
        [*command, "--tei", url]
        if command == ["doctor"]
        else [*command, "-e", f"a=tei@{url}", "--out", str(tmp_path / "o")]
    )
    code, stdout, stderr = run_cli(args, monkeypatch, capsys)
    assert code in (1, 2) and "http://***@127.0.0.1:9" in stdout + stderr, stdout + stderr
    assert "SeKr1t" not in stdout + stderr
