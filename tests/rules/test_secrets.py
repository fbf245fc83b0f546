"""rules.secrets: what the scan finds, where, that it never shows a secret, and what it
leaves alone (placeholders, sample values, tests and generated code)."""

from __future__ import annotations

import io

import pytest

from marketplace.packages.archive import ArchiveLimits, inspect_archive
from marketplace_rules.findings import Code
from marketplace_rules.limits import MIB
from marketplace_rules.secrets import (
    AWS_SECRET_KEY,
    HITS_PER_FILE,
    KEYWORD_SECRET,
    LINE_MAX,
    REPLACED_PATTERNS,
    FileScan,
    mask,
    scan_bytes,
    scan_document,
    secret_findings,
)
from tests.packages.tarballs import package

TOKEN = "mkt_pat_" + "abcDEF0123456789_-" * 2 + "abcdefg"
AWS_KEY = "AKIAQ3ZLBN5TJ2HVX7PW"  # the shape of an access key id (not a real one)


def test_token_shape_is_the_one_the_service_issues() -> None:
    assert len(TOKEN) == len("mkt_pat_") + 43
    assert scan_bytes("a.txt", TOKEN.encode()).tokens == {TOKEN}


def test_mask_keeps_four_characters_and_the_length() -> None:
    assert mask(AWS_KEY) == "AKIA…(20 chars)"


@pytest.mark.parametrize("piece", [1, 7, 1000, 64 * 1024])
def test_a_secret_cut_by_piece_boundaries_is_found_once_with_its_line(piece: int) -> None:
    data = b"x = 1\n" * 30000 + f"key = '{AWS_KEY}' # {TOKEN}\n".encode() + b"y\n" * 10
    scan = FileScan("src/a.py")
    for start in range(0, len(data), piece):
        scan.feed(data[start : start + piece])
    scan.finish()
    assert sorted((hit.kind, hit.line, hit.path) for hit in scan.hits) == [
        ("AWS Access Key", 30001, "file:src/a.py"),
        ("marketplace publishing token", 30001, "file:src/a.py"),
    ]
    assert scan.tokens == {TOKEN}


def test_a_long_secret_straddling_a_boundary_is_seen_whole() -> None:
    secret = "glagent-" + "q7Rk2mZp9L" * 100
    data = b"x" * (64 * 1024 - 500) + secret.encode() + b" y\n" + b"z" * 70_000
    for piece in (7, 1000, 64 * 1024, 65_000):
        scan = FileScan("a.txt")
        for start in range(0, len(data), piece):
            scan.feed(data[start : start + piece])
        assert [hit.masked for hit in scan.finish().hits] == ["glag…(1008 chars)"], piece


def test_binary_files_are_not_read() -> None:
    scan = scan_bytes("img.png", b"\x89PNG\0\0" + AWS_KEY.encode())
    assert scan.binary and scan.hits == []


def test_hits_per_file_are_bounded() -> None:
    scan = scan_bytes("many.txt", (AWS_KEY + "\n").encode() * 1000)
    assert len(scan.hits) == HITS_PER_FILE


def test_documents_are_scanned_string_by_string_keys_included() -> None:
    document = {"mcp": {"env": {"KEY": AWS_KEY}}, "config": [{"default": TOKEN}], AWS_KEY: 1}
    found = scan_document(document)
    assert sorted(hit.path for hit in found.hits) == [AWS_KEY, "config[0].default", "mcp.env.KEY"]
    assert found.tokens == {TOKEN}


def test_findings_are_errors_and_never_hold_the_secret() -> None:
    hits = scan_bytes("a.js", f"{AWS_KEY}\n{TOKEN}\n".encode()).hits
    findings = secret_findings(hits)
    assert [(f.code, f.severity) for f in findings] == [
        (Code.SECRET, "error"),
        (Code.MARKETPLACE_TOKEN, "error"),
    ]
    text = " ".join(f.message + f.path for f in findings)
    assert AWS_KEY not in text and TOKEN not in text
    assert "mkt_…(51 chars)" in text and "on line 2" in text


def test_inspect_archive_reads_whole_files_and_names_them_without_the_root_folder() -> None:
    big = b"// filler line\n" * (2 * MIB // 15) + f"const k = '{AWS_KEY}';\n".encode()
    data = package({"id": "demo", "version": "1.0.0"}, {"lib/big.js": big}, prefix="demo/")
    info = inspect_archive(io.BytesIO(data), ArchiveLimits.for_package(100 * MIB))
    assert [(hit.path, hit.kind) for hit in info.secrets] == [("file:lib/big.js", "AWS Access Key")]
    assert info.found_tokens == frozenset()
    assert AWS_KEY not in repr(info)


def test_inspect_archive_keeps_token_values_out_of_its_repr() -> None:
    data = package({"id": "demo", "version": "1.0.0"}, {".env": f"T={TOKEN}\n".encode()})
    info = inspect_archive(io.BytesIO(data), ArchiveLimits.for_package(100 * MIB))
    assert info.found_tokens == frozenset({TOKEN})
    assert TOKEN not in repr(info)


# ---------- generic values, passwords and AWS secret keys (issue 23) ----------

API_KEY = "sk-proj-4fK9qL2mV8xR1tZ7"  # an OpenAI-like key without OpenAI's own marker
PASSWORD = "hunter2-something"
AWS_SECRET = "Zt8kQ2vN7xR4mP9sL3wH6yB1cF5gJ0aD2eK8uT4o"  # 40 base64 characters


def kinds(path: str, text: str) -> list[tuple[str, int | None, str]]:
    return [(hit.kind, hit.line, hit.masked) for hit in scan_bytes(path, text.encode()).hits]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (".env", f'OPENAI_API_KEY="{API_KEY}"\n'),
        (".env.production", f"OPENAI_API_KEY={API_KEY}\n"),
        ("config.json", f'{{"OPENAI_API_KEY": "{API_KEY}"}}\n'),
        ("src/client.js", f'const OPENAI_API_KEY = "{API_KEY}";\n'),
        ("client.py", f'OPENAI_API_KEY = "{API_KEY}"\n'),
        ("settings.yaml", f"openai_api_key: {API_KEY}\n"),
    ],
)
def test_a_generic_api_key_value_is_found(path: str, text: str) -> None:
    assert kinds(path, text) == [(KEYWORD_SECRET, 1, "sk-p…(24 chars)")]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (".env", f"DB_PASSWORD={PASSWORD}\n"),
        ("config.json", f'{{"db": {{"DB_PASSWORD": "{PASSWORD}"}}}}\n'),
        ("db.js", f"export const config = {{ host: 'db', password: '{PASSWORD}' }};\n"),
        ("db.py", f'DB_PASSWORD = "{PASSWORD}"\n'),
    ],
)
def test_a_password_is_found(path: str, text: str) -> None:
    assert kinds(path, text) == [(KEYWORD_SECRET, 1, "hunt…(17 chars)")]


@pytest.mark.parametrize(
    ("path", "text"),
    [
        (".env", f"AWS_ACCESS_KEY_ID={AWS_KEY}\nAWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"),
        (
            "aws.json",
            f'{{"accessKeyId": "{AWS_KEY}",\n  "secretAccessKey": "{AWS_SECRET}"}}\n',
        ),
        ("s3.js", f'new S3({{ credentials: ["{AWS_KEY}",\n  "{AWS_SECRET}"] }});\n'),
        ("s3.py", f'boto3.client("s3", "{AWS_KEY}",\n  "{AWS_SECRET}")\n'),
    ],
)
def test_an_aws_secret_key_next_to_its_access_key_id_is_found(path: str, text: str) -> None:
    assert kinds(path, text) == [
        ("AWS Access Key", 1, "AKIA…(20 chars)"),
        (AWS_SECRET_KEY, 2, "Zt8k…(40 chars)"),
    ]


def test_an_aws_secret_key_assigned_without_quotes_is_found_alone() -> None:
    text = f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"
    assert kinds("install.sh", text) == [(AWS_SECRET_KEY, 1, "Zt8k…(40 chars)")]
    assert kinds("README.md", f"    {text}") == [(AWS_SECRET_KEY, 1, "Zt8k…(40 chars)")]


def test_a_keyword_value_in_a_manifest_is_found_at_its_path() -> None:
    document = {"mcp": {"env": {"DB_PASSWORD": PASSWORD, "API_KEY": "${API_KEY}"}}}
    assert [(hit.kind, hit.path) for hit in scan_document(document).hits] == [
        (KEYWORD_SECRET, "mcp.env.DB_PASSWORD")
    ]


@pytest.mark.parametrize("piece", [1, 7, 1000, 64 * 1024])
def test_a_keyword_assignment_cut_by_piece_boundaries_is_found_once(piece: int) -> None:
    data = (
        b"x = 1\n" * 10920
        + f'DB_PASSWORD = "{PASSWORD}"\n'.encode()
        + b"y = 2\n" * 30
        + f'("{AWS_KEY}", "{AWS_SECRET}")\n'.encode()
    )
    scan = FileScan("settings.py")
    for start in range(0, len(data), piece):
        scan.feed(data[start : start + piece])
    assert [(hit.kind, hit.line) for hit in scan.finish().hits] == [
        (KEYWORD_SECRET, 10921),
        ("AWS Access Key", 10952),
        (AWS_SECRET_KEY, 10952),
    ]


PLACEHOLDERS = [
    'OPENAI_API_KEY="your-api-key"',
    "OPENAI_API_KEY=your_openai_api_key_here",
    "API_KEY=xxx",
    "API_KEY=xxxxxxxxxxxxxxxxxxxxxxxx",
    "API_KEY=sk-...",
    "DB_PASSWORD=changeme",
    "DB_PASSWORD=${DB_PASSWORD}",
    "DB_PASSWORD={{ db_password }}",
    "DB_PASSWORD=<password>",
    'password = "********"',
    "password = ''",
    'api_key = os.environ["OPENAI_API_KEY"]',
    'api_key = get_secret("openai-prod")',
    "const apiKey = process.env.OPENAI_API_KEY;",
    'const apiKey = "process.env.OPENAI_API_KEY";',
    'const secretName = "OPENAI_API_KEY";',
    'password_last_used = "not_supported"',
    '"password": "Passwort"',
    '"password": "Mot de passe"',
    '"secret": "P@55w0rd!"',
    '"apiKey": "sk-abc123xyz789def456"',
    '"secret": "2016-09-08T21:47:36Z"',
    '"AWS::ApiGateway::ApiKey": "b899a0d240b53d9d"',
    'client_id = "42"; client_secret = "s3cr3t-v4lue-9"',
    'passwordFile = "/run/secrets/db_password.txt"',
    'password = "https://example.com/reset"',
    f"AWS_ACCESS_KEY_ID={'AKIAIOSFODNN7EXAMPLE'}",
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    'const token = "glpat-mock-token-ci-variables";',
    'const token = "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";',
    'const token = "glpat-ABCDEFG123456789-abcdef";',
]


@pytest.mark.parametrize("line", PLACEHOLDERS)
@pytest.mark.parametrize("path", [".env", "config.json", "index.js", "app.py", "README.md"])
def test_placeholders_are_not_secrets(path: str, line: str) -> None:
    assert kinds(path, f"{line}\n") == []


def test_the_allowlist_comment_of_detect_secrets_is_honoured() -> None:
    assert kinds("db.py", f'DB_PASSWORD = "{PASSWORD}"  # pragma: allowlist secret\n') == []
    text = f'// pragma: allowlist nextline secret\nconst password = "{PASSWORD}";\n'
    assert kinds("db.js", text) == []


@pytest.mark.parametrize(
    "path",
    [
        "package-lock.json",
        "yarn.lock",
        "docs/swagger.json",
        "tests/fixtures/config.json",
        "src/__tests__/db.test.js",
        "test_db.py",
        "examples/settings.json",
        "dist/app.js.map",
    ],
)
def test_lock_files_swagger_tests_and_examples_are_not_searched_for_keywords(path: str) -> None:
    assert kinds(path, f'{{"password": "{PASSWORD}"}}\n') == []


def test_the_detectors_still_run_on_tests() -> None:
    assert kinds("tests/fixtures/config.json", f'{{"key": "{AWS_KEY}"}}\n') == [
        ("AWS Access Key", 1, "AKIA…(20 chars)")
    ]


def test_minified_lines_are_not_searched_for_keywords() -> None:
    line = "var a=1;" * (LINE_MAX // 8) + f'var password="{PASSWORD}";\n'
    assert kinds("dist/app.min.js", line) == []
    assert kinds("dist/app.js", f'var password="{PASSWORD}";\n') != []


def test_a_private_key_header_without_key_material_is_code() -> None:
    code = 'if (pem.startsWith("-----BEGIN RSA PRIVATE KEY-----")) { return "rsa"; }\n'
    assert kinds("pem.js", code) == []
    sample = "-----BEGIN PRIVATE KEY-----<a very long private key string>-----END PRIVATE KEY-----"
    assert kinds("doc.json", f'{{"PrivateKey": "{sample}"}}\n') == []
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu5" + "q7Rk2mZp9L" * 6 + "\n"
    assert kinds("keys/id_rsa", key) == [("Private Key", 1, "BEGI…(21 chars)")]


def test_an_aws_key_id_inside_a_longer_base64_run_is_not_a_key() -> None:
    blob = "AGFzbQEAAAABJwdgAX8Bf2AD" + AWS_KEY + "f39/AX9gAn9/AGABfwBgBH9"
    assert kinds("wasm.js", f'var wasm = "{blob}";\n') == []
    assert kinds("dna.py", f"s = '{'AAACCA' + 'TCTCTACCGGTTCGCTTTC' * 3}'\n") == []


# ---------- real secrets the keyword detection must not miss ----------

OPENAI_PROJECT_KEY = "sk-proj-Hx7Rk2Qm9Lp4Vt8Zn3Wb6Jc1Fd5Gs0Ya2Ke7UoQ9"  # sk-proj- and 40 random
RANDOM_32 = "Wq4Rt9Zp2Lk7Xv3Nm8Bc5Hj1Gf6Ds0Ta"


@pytest.mark.parametrize("path", ["app.py", "src/client.js", "client.ts", "settings.toml"])
def test_a_key_passed_to_a_call_is_found(path: str) -> None:
    text = f'client = OpenAI(api_key="{OPENAI_PROJECT_KEY}")\n'
    assert kinds(path, text) == [(KEYWORD_SECRET, 1, "sk-p…(48 chars)")]


@pytest.mark.parametrize("path", ["config.json", "app.js", "settings.yaml"])
def test_every_keyword_assignment_on_a_line_is_judged(path: str) -> None:
    text = f'{{"password": "hunter2-real-pass", "api_key": "{RANDOM_32}"}}\n'
    assert kinds(path, text) == [
        (KEYWORD_SECRET, 1, "hunt…(17 chars)"),
        (KEYWORD_SECRET, 1, "Wq4R…(32 chars)"),
    ]


def test_an_assignment_after_a_placeholder_on_the_same_line_is_found() -> None:
    text = f'{{"password": "changeme", "api_key": "{RANDOM_32}"}}\n'
    assert kinds("config.json", text) == [(KEYWORD_SECRET, 1, "Wq4R…(32 chars)")]


@pytest.mark.parametrize(
    "value",
    [
        "kQ7vXyz3mR9pL2wN8tB4hJ6cF1dG5sA0",  # holds `Xyz`
        "pR4tDem0qW8zN3kV7xL2mB9cH5jF6sG1",  # holds `Dem0`, "demo" with a digit for a letter
        "Zk8Pq3Abc9Lw2Vn7Tr5Mx1Hd6Jb4Gs0F",  # holds `abc`
    ],
)
def test_a_random_key_holding_a_placeholder_word_is_found(value: str) -> None:
    assert kinds("config.json", f'{{"api_key": "{value}"}}\n') == [
        (KEYWORD_SECRET, 1, f"{value[:4]}…(32 chars)")
    ]


@pytest.mark.parametrize(
    "value",
    [
        "tok-2024-01-15-Xq7Lp2Rk9Vn4Bz8Wc3Md",  # holds a date
        "/Kq8vR2xLp9Tz3Wn7Bc4Md6Hs1Jf5Ga0Ye",  # starts with a slash, as base64 may
        "/Kq8vR2xLp9Tz3W+n7Bc4Md6Hs1Jf5Ga0Y=",
        "Nc5Hw8Qz2Lm7Rt4Vx9Kb.Jd",  # ends with a dot and two letters
    ],
)
def test_a_value_holding_a_date_or_shaped_like_a_path_in_part_is_found(value: str) -> None:
    assert kinds(".env", f"DB_PASSWORD={value}\n") == [
        (KEYWORD_SECRET, 1, f"{value[:4]}…({len(value)} chars)")
    ]


@pytest.mark.parametrize(
    ("path", "line"),
    [
        (".env", f"AUTH_TOKEN={RANDOM_32}"),
        (".env", f"ACCESS_TOKEN={RANDOM_32}"),
        (".env", f"export GITHUB_TOKEN={RANDOM_32}"),
        ("settings.yaml", f"slack-bot-token: {RANDOM_32}"),
        ("app.js", f'const accessToken = "{RANDOM_32}";'),
        ("app.py", f'HEADERS = {{"x-api-key": "{RANDOM_32}"}}'),
        ("deploy.yaml", f"  private-key: {RANDOM_32}"),
    ],
)
def test_token_names_and_hyphenated_names_are_keywords(path: str, line: str) -> None:
    assert kinds(path, f"{line}\n") == [(KEYWORD_SECRET, 1, "Wq4R…(32 chars)")]


def test_a_token_name_in_a_manifest_is_a_keyword() -> None:
    document = {"mcp": {"env": {"AUTH_TOKEN": RANDOM_32}}}
    assert [(hit.kind, hit.path) for hit in scan_document(document).hits] == [
        (KEYWORD_SECRET, "mcp.env.AUTH_TOKEN")
    ]


def test_the_patterns_replaced_for_speed_are_detect_secrets_own() -> None:
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.openai import OpenAIDetector

    theirs = {p.pattern for d in (AWSKeyDetector(), OpenAIDetector()) for p in d.denylist}
    assert set(REPLACED_PATTERNS) <= theirs


@pytest.mark.parametrize(
    "key",
    [
        "sk-" + "Ab3dE" * 4 + "T3BlbkFJ" + "Zy9xW" * 4,
        "sk-proj-" + "Ab3dE_f-Gh" * 5 + "Kq8vR2xLp9Tz3Wn7Bc4M" + "T3BlbkFJ" + "Zy9xW" * 4,
    ],
)
def test_an_openai_key_is_found_by_its_marker(key: str) -> None:
    assert kinds("app.js", f"const client = new OpenAI({{ key: '{key}' }});\n") == [
        ("OpenAI Token", 1, f"{key[:4]}…({len(key)} chars)")
    ]


NOT_SECRETS = [
    '"password": "SuperSecret123!"',  # sample words and a sequence
    'API_KEY: "user-123-api-key"',
    '"output_token": "Jobs[-1].JobId"',  # a field named token, in lower case
    'eos_token = "<|endoftext|>"',
    'AWS_METADATA_TOKEN_HEADER = "X-aws-ec2-metadata-token"',  # the name of a token's header
    'var AUTH_TOKEN_PREFIX = "base64url.bearer.phx."',
    '"kms:EncryptionContext:SecretARN": "arn:aws:secretsmanager:*:*:secret:*"',
    '"secretsmanager:SecretId": "arn:*:secretsmanager:*:*:secret:AmazonMSK_*"',
    'client_secret = "{client_secret}"',
]


@pytest.mark.parametrize("line", NOT_SECRETS)
@pytest.mark.parametrize("path", [".env", "config.json", "index.js", "app.py"])
def test_names_samples_and_resource_names_are_not_secrets(path: str, line: str) -> None:
    assert kinds(path, f"{line}\n") == []


def test_the_archive_scans_share_one_package_budget() -> None:
    # Each file spends its whole keyword allowance on placeholders before a real password:
    # ten files exhaust the package's budget, so the later files are not searched.
    filler = "".join(f'password_{i} = "changeme"\n' for i in range(999))
    files = {
        f"conf/c{n:02}.py": (filler + f'DB_PASSWORD = "{PASSWORD}"\n').encode() for n in range(14)
    }
    data = package({"id": "demo", "version": "1.0.0"}, files)

    info = inspect_archive(io.BytesIO(data), ArchiveLimits.for_package(100 * MIB))

    found = sorted({hit.path for hit in info.secrets})
    assert found == [f"file:conf/c{n:02}.py" for n in range(10)]
