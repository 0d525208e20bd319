"""Connection security without a broker: the settings refuse what cannot connect, naming the
variable; :mod:`toolwire.config.security` makes the client options and Faust's credentials; the
password shows nowhere. (``tests/app/test_secured_broker.py`` runs them on a real cluster.)"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tls import make_certificates, openssl
from toolwire.config.security import (
    SecurityError,
    client_options,
    faust_credentials,
    sasl_password,
    ssl_context,
    verify,
)
from toolwire.config.settings import Secret, Settings
from toolwire.publish import ChunkPublisher

PASSWORD = "s3cret-Pa55word-canary"

needs_openssl = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl")
    return make_certificates(tmp_path_factory.mktemp("certs"))


def sasl_env(**changes: str) -> dict[str, str]:
    env = {"KAFKA_BOOTSTRAP_SERVERS": "kafka1:9093",
           "TOOLWIRE_SECURITY_PROTOCOL": "SASL_SSL",
           "TOOLWIRE_SASL_MECHANISM": "SCRAM-SHA-512",
           "TOOLWIRE_SASL_USERNAME": "toolwire",
           "TOOLWIRE_SASL_PASSWORD": PASSWORD}
    env.update(changes)
    return {k: v for k, v in env.items() if v != "<unset>"}


def refused(env: dict[str, str]) -> str:
    with pytest.raises(ValueError) as info:
        Settings.from_env(env)
    message = str(info.value)
    assert PASSWORD not in message
    return message


# --------------------------------------------------------------------------- settings


def test_plaintext_is_the_default_and_needs_nothing() -> None:
    settings = Settings.from_env({})
    assert settings.security_protocol == "PLAINTEXT" and not settings.secured
    assert client_options(settings) == {"security_protocol": "PLAINTEXT"}
    assert faust_credentials(settings) is None


def test_sasl_settings_from_the_environment() -> None:
    settings = Settings.from_env(sasl_env(TOOLWIRE_SECURITY_PROTOCOL="sasl_ssl",
                                          TOOLWIRE_SASL_MECHANISM="scram-sha-512"))
    assert settings.security_protocol == "SASL_SSL" and settings.secured
    assert settings.sasl_mechanism == "SCRAM-SHA-512"
    assert settings.sasl_username == "toolwire"
    assert settings.sasl_password == Secret(PASSWORD)
    assert settings.ssl_check_hostname is True


def test_the_password_never_shows() -> None:
    settings = Settings.from_env(sasl_env())
    for text in (repr(settings), str(settings), repr(settings.sasl_password),
                 str(settings.sasl_password), f"{settings.sasl_password}",
                 repr(faust_credentials(settings))):
        assert PASSWORD not in text
    assert settings.sasl_password is not None and settings.sasl_password.reveal() == PASSWORD


@pytest.mark.parametrize(("changes", "names"), [
    ({"TOOLWIRE_SASL_USERNAME": "<unset>"}, ["TOOLWIRE_SASL_USERNAME"]),
    ({"TOOLWIRE_SASL_PASSWORD": "<unset>"},
     ["TOOLWIRE_SASL_PASSWORD", "TOOLWIRE_SASL_PASSWORD_FILE", "neither"]),
    ({"TOOLWIRE_SECURITY_PROTOCOL": "SASL"}, ["TOOLWIRE_SECURITY_PROTOCOL", "SASL_SSL"]),
    ({"TOOLWIRE_SASL_MECHANISM": "GSSAPI"}, ["TOOLWIRE_SASL_MECHANISM", "SCRAM-SHA-256"]),
    ({"TOOLWIRE_SECURITY_PROTOCOL": "PLAINTEXT"},
     ["TOOLWIRE_SASL_USERNAME", "TOOLWIRE_SASL_PASSWORD", "does not use SASL"]),
    ({"TOOLWIRE_SECURITY_PROTOCOL": "SASL_PLAINTEXT", "TOOLWIRE_SSL_CHECK_HOSTNAME": "false"},
     ["TOOLWIRE_SSL_CHECK_HOSTNAME", "does not use TLS"]),
    ({"KAFKA_BOOTSTRAP_SERVERS": "<unset>"}, ["KAFKA_BOOTSTRAP_SERVERS"]),
    ({"TOOLWIRE_SSL_CHECK_HOSTNAME": "maybe"}, ["TOOLWIRE_SSL_CHECK_HOSTNAME", "true or false"]),
])
def test_a_combination_that_cannot_connect_names_what_to_fix(
        changes: dict[str, str], names: list[str]) -> None:
    message = refused(sasl_env(**changes))
    for name in names:
        assert name in message, message


def test_exactly_one_password(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text(PASSWORD + "\n")
    message = refused(sasl_env(TOOLWIRE_SASL_PASSWORD_FILE=str(secret)))
    assert "both are set" in message
    settings = Settings.from_env(sasl_env(TOOLWIRE_SASL_PASSWORD="<unset>",
                                          TOOLWIRE_SASL_PASSWORD_FILE=str(secret)))
    assert settings.sasl_password is None
    assert sasl_password(settings) == PASSWORD  # the trailing newline is not part of it
    assert client_options(dataclasses.replace(settings, security_protocol="SASL_PLAINTEXT")
                          )["sasl_plain_password"] == PASSWORD
    secret.write_text("\n")
    with pytest.raises(ValueError, match=r"TOOLWIRE_SASL_PASSWORD_FILE=.* is empty"):
        sasl_password(settings)


@pytest.mark.parametrize("name", ["TOOLWIRE_SASL_PASSWORD_FILE", "TOOLWIRE_SSL_CA_FILE"])
def test_a_missing_file_is_named_with_its_path(name: str, tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    env = sasl_env(**{name: str(missing)})
    if name == "TOOLWIRE_SASL_PASSWORD_FILE":
        del env["TOOLWIRE_SASL_PASSWORD"]
    message = refused(env)
    assert f"{name}='{missing}': does not exist" in message, message
    assert f"{name}='{tmp_path}': is not a file" in refused({**env, name: str(tmp_path)})


def test_a_client_certificate_needs_its_key(certs: dict[str, Path]) -> None:
    message = refused(sasl_env(TOOLWIRE_SSL_CERT_FILE=str(certs["client.pem"])))
    assert "TOOLWIRE_SSL_CERT_FILE is set without TOOLWIRE_SSL_KEY_FILE" in message
    message = refused(sasl_env(TOOLWIRE_SSL_KEY_FILE=str(certs["client.key"])))
    assert "TOOLWIRE_SSL_KEY_FILE is set without TOOLWIRE_SSL_CERT_FILE" in message
    message = refused({"KAFKA_BOOTSTRAP_SERVERS": "k:1",
                       "TOOLWIRE_SSL_CA_FILE": str(certs["ca.pem"])})
    assert "TOOLWIRE_SSL_CA_FILE" in message and "does not use TLS" in message


# --------------------------------------------------------------------------- client options


def test_sasl_ssl_options(certs: dict[str, Path]) -> None:
    settings = Settings.from_env(sasl_env(TOOLWIRE_SSL_CA_FILE=str(certs["ca.pem"])))
    options = client_options(settings)
    assert set(options) == {"security_protocol", "ssl_context", "sasl_mechanism",
                            "sasl_plain_username", "sasl_plain_password"}
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert options["sasl_plain_username"] == "toolwire"
    assert options["sasl_plain_password"] == PASSWORD
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    loose = client_options(dataclasses.replace(settings, ssl_check_hostname=False))
    assert not loose["ssl_context"].check_hostname
    assert loose["ssl_context"].verify_mode == ssl.CERT_REQUIRED


def test_sasl_plaintext_defaults_to_plain() -> None:
    settings = Settings.from_env(sasl_env(TOOLWIRE_SECURITY_PROTOCOL="SASL_PLAINTEXT",
                                          TOOLWIRE_SASL_MECHANISM="<unset>"))
    assert client_options(settings) == {
        "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "toolwire", "sasl_plain_password": PASSWORD}


def test_ssl_with_a_client_certificate(certs: dict[str, Path]) -> None:
    settings = Settings(bootstrap="k:1", security_protocol="SSL", ssl_ca_file=certs["ca.pem"],
                        ssl_cert_file=certs["client.pem"], ssl_key_file=certs["client.key"])
    options = client_options(settings)
    assert set(options) == {"security_protocol", "ssl_context"}
    assert options["security_protocol"] == "SSL"
    swapped = dataclasses.replace(settings, ssl_cert_file=certs["client.key"],
                                  ssl_key_file=certs["client.pem"])
    with pytest.raises(ValueError, match=r"TOOLWIRE_SSL_CERT_FILE=.* and TOOLWIRE_SSL_KEY_FILE"):
        ssl_context(swapped)


def test_a_file_that_is_not_pem_is_named(certs: dict[str, Path], tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    settings = Settings(bootstrap="k:1", security_protocol="SSL", ssl_ca_file=junk)
    with pytest.raises(ValueError, match=r"TOOLWIRE_SSL_CA_FILE='.*junk\.pem': not usable"):
        client_options(settings)


@needs_openssl
def test_an_encrypted_key_is_refused_without_a_prompt(certs: dict[str, Path],
                                                      tmp_path: Path) -> None:
    openssl("pkcs8", "-topk8", "-in", str(certs["client.key"]), "-out", "enc.key",
            "-passout", "pass:whatever", cwd=tmp_path)
    settings = Settings(bootstrap="k:1", security_protocol="SSL", ssl_ca_file=certs["ca.pem"],
                        ssl_cert_file=certs["client.pem"], ssl_key_file=tmp_path / "enc.key")
    with pytest.raises(ValueError, match="the key is encrypted"):
        ssl_context(settings)


# --------------------------------------------------------------------------- faust


def test_faust_credentials(certs: dict[str, Path]) -> None:
    import faust
    from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

    settings = Settings.from_env(sasl_env(TOOLWIRE_SSL_CA_FILE=str(certs["ca.pem"])))
    credentials = faust_credentials(settings)
    assert isinstance(credentials, faust.SASLCredentials)
    auth = credentials_to_aiokafka_auth(credentials)
    assert auth["security_protocol"] == "SASL_SSL"
    assert auth["sasl_mechanism"] == "SCRAM-SHA-512"
    assert auth["sasl_plain_username"] == "toolwire"
    assert auth["sasl_plain_password"] == PASSWORD
    assert isinstance(auth["ssl_context"], ssl.SSLContext)

    plain = credentials_to_aiokafka_auth(faust_credentials(
        dataclasses.replace(settings, security_protocol="SASL_PLAINTEXT", ssl_ca_file=None)))
    assert plain["security_protocol"] == "SASL_PLAINTEXT" and plain["ssl_context"] is None

    tls = faust_credentials(Settings(bootstrap="k:1", security_protocol="SSL",
                                     ssl_ca_file=certs["ca.pem"]))
    assert isinstance(tls, faust.SSLCredentials)
    assert credentials_to_aiokafka_auth(tls)["security_protocol"] == "SSL"


def test_the_worker_app_connects_with_the_credentials(certs: dict[str, Path],
                                                      tmp_path: Path) -> None:
    from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

    from toolwire.app.faust_app import build_faust_app

    settings = dataclasses.replace(
        Settings.from_env(sasl_env(TOOLWIRE_SSL_CA_FILE=str(certs["ca.pem"]))),
        state_dir=tmp_path)
    app = build_faust_app(settings)
    auth = credentials_to_aiokafka_auth(app.conf.broker_credentials, app.conf.ssl_context)
    assert auth["security_protocol"] == "SASL_SSL"
    assert auth["sasl_plain_password"] == PASSWORD
    producer = app.producer
    assert producer._settings_auth()["sasl_mechanism"] == "SCRAM-SHA-512"
    assert build_faust_app(Settings(state_dir=tmp_path)).conf.broker_credentials is None


# --------------------------------------------------------------------------- clients


def test_the_publisher_takes_security_options_and_reads_no_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLWIRE_SECURITY_PROTOCOL", "SASL_SSL")  # ignored: it is a library
    assert ChunkPublisher("k:1", "t")._options.get("security_protocol") is None
    security = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                "sasl_plain_username": "u", "sasl_plain_password": PASSWORD}
    publisher = ChunkPublisher("k:1", "t", security=security)
    assert publisher._options["sasl_plain_password"] == PASSWORD
    assert publisher._options["acks"] == "all" and publisher._options["enable_idempotence"]
    with pytest.raises(TypeError, match="not a connection security option: acks"):
        ChunkPublisher("k:1", "t", security={"acks": 1})
    with pytest.raises(TypeError, match="borrowed producer"):
        ChunkPublisher(object(), "t", security=security)  # type: ignore[arg-type]


def test_verify_says_what_to_check_when_nothing_answers() -> None:
    settings = Settings.from_env(sasl_env(TOOLWIRE_SECURITY_PROTOCOL="SASL_PLAINTEXT",
                                          KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:9"))
    with pytest.raises(SecurityError) as info:
        asyncio.run(verify("127.0.0.1:9", client_options(settings), settings, timeout=5))
    message = str(info.value)
    assert "127.0.0.1:9" in message and "KAFKA_BOOTSTRAP_SERVERS" in message
    assert PASSWORD not in message


@pytest.mark.parametrize("command", [["consume", "assembled"], ["worker"],
                                     ["dlq", "release", "s"], ["topics", "apply"],
                                     ["publish", "x.sse", "--session", "s"],
                                     ["broker", "status"]])
def test_every_kafka_command_refuses_bad_security_settings_as_a_usage_error(
        command: list[str], tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", **sasl_env(TOOLWIRE_SASL_USERNAME="<unset>"),
           "TOOLWIRE_STATE_DIR": str(tmp_path)}
    if command[0] == "publish":
        (tmp_path / "x.sse").write_text("data: [DONE]\n\n")
    done = subprocess.run([sys.executable, "-m", "toolwire.cli", *command], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert "TOOLWIRE_SASL_USERNAME" in done.stderr
    assert PASSWORD not in done.stdout + done.stderr
