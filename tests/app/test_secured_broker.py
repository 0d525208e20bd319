"""Toolwire on a secured cluster: its own broker with a SASL_SSL listener (SCRAM-SHA-512, also
SCRAM-SHA-256 and PLAIN) and an SSL listener that requires a client certificate.

The certificates are made with openssl in the test's tmp dir; the broker is the local one of
:mod:`toolwire.broker.local`, started with :class:`~toolwire.broker.local.BrokerOptions` (it is
not the shared plaintext broker) and stopped by its PID. ``toolwire topics apply`` and a real
``toolwire worker`` run as subprocesses configured only by ``TOOLWIRE_*`` variables; the test
publishes with :class:`~toolwire.publish.ChunkPublisher` and reads with aiokafka, both given the
options of :func:`toolwire.config.security.client_options`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import re
import secrets
import socket
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.conn import create_conn
from aiokafka.errors import KafkaConnectionError, SaslAuthenticationFailed
from aiokafka.protocol.metadata import MetadataRequest

from tests.app.support import Deployment, Worker
from tests.core.sse import body, call, chunk
from tests.tls import make_certificates
from toolwire.broker.local import BrokerOptions, probe, start, stop
from toolwire.config.security import client_options
from toolwire.config.settings import Secret, Settings
from toolwire.publish import ChunkPublisher, RequestMeta

pytestmark = [pytest.mark.broker, pytest.mark.timeout(240)]

USER = "toolwire"
PLAIN_USER = "toolwire-plain"


def _pem_value(path: Path) -> str:
    """A PEM file as one ``server.properties`` value (Java reads ``\\n`` as a new line)."""
    return path.read_text().strip().replace("\n", "\\n")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class SecuredCluster:
    bootstrap: str  # the SASL_SSL listener
    ssl_bootstrap: str  # the SSL listener (client certificate required)
    state_dir: Path
    certs: dict[str, Path]
    password: str
    plain_password: str
    password_file: Path

    def settings(self, **changes: Any) -> Settings:
        base = Settings(bootstrap=self.bootstrap, security_protocol="SASL_SSL",
                        sasl_mechanism="SCRAM-SHA-512", sasl_username=USER,
                        sasl_password=Secret(self.password), ssl_ca_file=self.certs["ca.pem"])
        return dataclasses.replace(base, **changes)

    def env(self, **overrides: str) -> dict[str, str]:
        """The ``TOOLWIRE_*`` connection variables of a command (the password from a file)."""
        env = {"KAFKA_BOOTSTRAP_SERVERS": self.bootstrap,
               "TOOLWIRE_SECURITY_PROTOCOL": "SASL_SSL",
               "TOOLWIRE_SASL_MECHANISM": "SCRAM-SHA-512",
               "TOOLWIRE_SASL_USERNAME": USER,
               "TOOLWIRE_SASL_PASSWORD_FILE": str(self.password_file),
               "TOOLWIRE_SSL_CA_FILE": str(self.certs["ca.pem"])}
        env.update(overrides)
        return env


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredCluster]:
    root = tmp_path_factory.mktemp("secured")
    certs = make_certificates(root / "certs")
    password = "tw-" + secrets.token_hex(16)
    plain_password = "twp-" + secrets.token_hex(16)
    broker_password = "twb-" + secrets.token_hex(16)
    password_file = root / "password"
    password_file.write_text(password + "\n")
    password_file.chmod(0o600)
    ssl_port = _free_port()
    scram = "org.apache.kafka.common.security.scram.ScramLoginModule required"
    properties = {
        "listeners": (f"SASL_SSL://127.0.0.1:{{broker_port}},SSL://127.0.0.1:{ssl_port},"
                      "CONTROLLER://127.0.0.1:{controller_port}"),
        "advertised.listeners": f"SASL_SSL://127.0.0.1:{{broker_port}},SSL://127.0.0.1:{ssl_port}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL",
        "inter.broker.listener.name": "SASL_SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        # The broker's own user, not Toolwire's: Toolwire's password is in no broker file.
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config":
            f'{scram} username="broker" password="{broker_password}";',
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": f"{scram};",
        "listener.name.sasl_ssl.plain.sasl.jaas.config":
            ("org.apache.kafka.common.security.plain.PlainLoginModule required "
             f'user_{PLAIN_USER}="{plain_password}";'),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": _pem_value(certs["server.pem"]),
        "ssl.keystore.key": _pem_value(certs["server.key"]),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(certs["ca.pem"]),
        "listener.name.ssl.ssl.client.auth": "required",
    }
    scram_users = [f"SCRAM-SHA-512=[name={USER},password={password}]",
                   f"SCRAM-SHA-256=[name={USER},password={password}]",
                   f"SCRAM-SHA-512=[name=broker,password={broker_password}]"]
    state_dir = root / "broker"
    probe_settings = Settings(bootstrap="x", security_protocol="SASL_SSL",
                              sasl_mechanism="SCRAM-SHA-512", sasl_username=USER,
                              sasl_password=Secret(password), ssl_ca_file=certs["ca.pem"])
    options = BrokerOptions(properties=properties, scram=scram_users,
                            client=client_options(probe_settings))
    try:
        info = start(state_dir, heap="384m", timeout=90, options=options)
        yield SecuredCluster(info.bootstrap, f"127.0.0.1:{ssl_port}", state_dir, certs,
                             password, plain_password, password_file)
    finally:
        stop(state_dir)  # by the PID in broker.json, only if it is our kafka.Kafka


def _toolwire(*args: str, env: dict[str, str], timeout: float = 60
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolwire.cli", *args], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


async def _pieces(data: bytes) -> AsyncIterator[bytes]:
    for piece in data.split(b"\n\n"):
        if piece:
            yield piece + b"\n\n"


async def _find(bootstrap: str, topic: str, request_id: str, security: dict[str, Any],
                timeout: float) -> dict[str, Any]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                **security)
    try:
        await consumer.start()
        await consumer._client.force_metadata_update()
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        assert tps, f"topic {topic} not found"
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for messages in batch.values():
                for m in messages:
                    record: dict[str, Any] = orjson.loads(m.value)
                    if record.get("request_id") == request_id:
                        return record
    finally:
        await consumer.stop()
    raise AssertionError(f"no record of {request_id} on {topic} within {timeout} s")


@dataclass
class SecuredDeployment(Deployment):
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        return {**super().env(), **self.extra_env}


def test_worker_assembles_on_sasl_ssl_and_a_wrong_password_stops_it(
        cluster: SecuredCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    logs: dict[str, str] = {}
    dep = SecuredDeployment(cluster.bootstrap, tmp_path / "dep", partitions=2)
    dep.extra_env = cluster.env()

    # Topics, with the password given directly this time.
    env = {**dep.env(), "TOOLWIRE_SASL_PASSWORD": cluster.password}
    del env["TOOLWIRE_SASL_PASSWORD_FILE"]
    applied = _toolwire("topics", "apply", env=env)
    logs["topics apply"] = applied.stdout + applied.stderr
    assert applied.returncode == 0, logs["topics apply"]
    assert applied.stdout.count("created ") == 3, applied.stdout

    # A wrong password: the worker stops at once, saying what to fix.
    wrong = "wrong-" + secrets.token_hex(8)
    bad_env = {**dep.env(), "TOOLWIRE_SASL_PASSWORD": wrong}
    del bad_env["TOOLWIRE_SASL_PASSWORD_FILE"]
    began = time.monotonic()
    refused = _toolwire("worker", env=bad_env, timeout=60)
    elapsed = time.monotonic() - began
    logs["wrong worker"] = refused.stdout + refused.stderr
    assert refused.returncode != 0, logs["wrong worker"]
    assert elapsed < 30, f"took {elapsed:.1f} s"
    assert "authentication failed" in refused.stderr, refused.stderr
    assert "TOOLWIRE_SASL_PASSWORD" in refused.stderr, refused.stderr
    assert wrong not in logs["wrong worker"]

    # The real worker, with the password file.
    worker = Worker(dep, tag="secured")
    canary = "canary-" + uuid.uuid4().hex
    request_id = "sec-" + uuid.uuid4().hex[:8]
    security = client_options(cluster.settings())
    try:
        worker.wait_ready(timeout=90)
        data = body(chunk(call(0, "call_sec_1", "get_weather", '{"city": "')),
                    chunk(call(0, "", "", canary + '"}'), finish="tool_calls"))

        async def publish_and_read() -> dict[str, Any]:
            async with ChunkPublisher(cluster.bootstrap, dep.chunks,
                                      security=security) as publisher:
                meta = RequestMeta(request_id=request_id, session_id="sess-sec",
                                   provider="test", declared_tools=["get_weather"])
                report = await publisher.publish_stream(meta, _pieces(data))
                assert report.end == "eof" and report.chunks == 3
            return await _find(cluster.bootstrap, dep.assembled, request_id, security, 60)

        record = asyncio.run(publish_and_read())
        assert record["outcome"] == "assembled"
        [tool_call] = record["tool_calls"]
        assert tool_call["id"] == "call_sec_1" and tool_call["name"] == "get_weather"
        assert tool_call["arguments"] == '{"city": "' + canary + '"}'
        assert worker.errors() == [], worker.tail()
    finally:
        worker.stop()
    logs["worker"] = worker.log.read_text(errors="replace")
    assert "[^Worker]: Ready" in logs["worker"]
    logs["broker"] = (cluster.state_dir / "broker.log").read_text(errors="replace")
    logs["this test"] = caplog.text

    # Neither the password nor a tool argument is in any log of the run.
    for name, text in logs.items():
        assert cluster.password not in text, f"the password is in the {name} log"
        assert canary not in text, f"a tool argument is in the {name} log"
    assert "SASL_SSL" in logs["broker"]  # the right log was read


def test_a_client_without_tls_is_refused(cluster: SecuredCluster) -> None:
    async def plaintext_producer() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap,
                                    request_timeout_ms=5000)
        try:
            await asyncio.wait_for(producer.start(), 20)
        finally:
            with contextlib.suppress(Exception):
                await producer.stop()

    with pytest.raises(KafkaConnectionError):
        asyncio.run(plaintext_producer())
    # SASL without TLS is refused too, and the command says what to check.
    done = _toolwire("topics", "apply", env={
        **os.environ, **cluster.env(TOOLWIRE_SECURITY_PROTOCOL="SASL_PLAINTEXT",
                                    TOOLWIRE_SSL_CA_FILE="")}, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "TOOLWIRE_SECURITY_PROTOCOL=SASL_PLAINTEXT" in done.stderr, done.stderr
    assert cluster.password not in done.stdout + done.stderr


#: The broker's line for a connection it refused at authentication (TLS or SASL), naming
#: its own listener's port first in the channel id.
_REFUSED_LINE = re.compile(r"Failed authentication with /127\.0\.0\.1 \(channelId=127\.0\.0\.1:"
                           r"(?P<port>\d+)-[^)]*\) \((?P<why>.*)\) \(org\.apache\.kafka")


async def _connect(bootstrap: str, security: dict[str, Any]) -> None:
    """One connection as a client makes it (TLS handshake, SASL authentication, then a
    metadata request), with aiokafka directly: its error is the one the broker caused, not a
    probe's ``None``."""
    host, _, port = bootstrap.rpartition(":")
    conn = await asyncio.wait_for(create_conn(host, int(port), request_timeout_ms=10_000,
                                              **security), 20)
    try:
        await asyncio.wait_for(conn.send(MetadataRequest([])), 20)
    finally:
        conn.close()


def _refused(cluster: SecuredCluster, bootstrap: str, settings: Settings
             ) -> tuple[BaseException, str]:
    """The error a client with ``settings`` meets at ``bootstrap``, and why the broker says it
    refused that client (its log line for the listener at ``bootstrap``); fails if the
    connection is accepted, or if the broker logs no refusal by that listener."""
    log = cluster.state_dir / "broker.log"
    since = log.stat().st_size
    try:
        asyncio.run(_connect(bootstrap, client_options(settings)))
    except Exception as exc:  # judged by the caller
        error: BaseException = exc
    else:
        raise AssertionError(f"{bootstrap} accepted a client it must refuse")
    port = bootstrap.rpartition(":")[2]
    deadline = time.monotonic() + 15
    while True:
        with log.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
        whys = [m["why"] for m in _REFUSED_LINE.finditer(text) if m["port"] == port]
        if whys:
            return error, whys[-1]
        assert time.monotonic() < deadline, (
            f"the broker logged no refusal by its listener {bootstrap} (the client saw "
            f"{error!r}):\n{text[-2000:]}")
        time.sleep(0.2)


def _tls_alert(exc: BaseException) -> str | None:
    """The reason of the first TLS error in ``exc``'s chain (aiokafka reports a handshake
    the server ended as a closed connection caused by it)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return str(seen.reason)
        seen = seen.__cause__ or seen.__context__
    return None


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_each_sasl_mechanism_logs_in(cluster: SecuredCluster, mechanism: str) -> None:
    settings = cluster.settings(sasl_mechanism=mechanism)
    if mechanism == "PLAIN":
        settings = dataclasses.replace(settings, sasl_username=PLAIN_USER,
                                       sasl_password=Secret(cluster.plain_password))
    assert probe(cluster.bootstrap, timeout=20, security=client_options(settings)) is not None
    asyncio.run(_connect(cluster.bootstrap, client_options(settings)))
    # A wrong password is refused by SASL itself, after a TLS handshake that succeeded: not
    # by a timeout, a closed port or a TLS failure, which would fail any client.
    wrong = dataclasses.replace(settings, sasl_password=Secret("not-" + secrets.token_hex(4)))
    error, why = _refused(cluster, cluster.bootstrap, wrong)
    assert isinstance(error, SaslAuthenticationFailed), repr(error)
    expected = ("Authentication failed: Invalid username or password" if mechanism == "PLAIN"
                else "Authentication failed during authentication due to invalid credentials "
                     f"with SASL mechanism {mechanism}")
    assert error.args == (expected,), repr(error)
    assert why == expected, why


def test_ssl_with_a_client_certificate(cluster: SecuredCluster) -> None:
    settings = Settings(bootstrap=cluster.ssl_bootstrap, security_protocol="SSL",
                        ssl_ca_file=cluster.certs["ca.pem"],
                        ssl_cert_file=cluster.certs["client.pem"],
                        ssl_key_file=cluster.certs["client.key"])
    assert probe(cluster.ssl_bootstrap, timeout=20,
                 security=client_options(settings)) is not None
    asyncio.run(_connect(cluster.ssl_bootstrap, client_options(settings)))
    # Without a client certificate, the broker ends the TLS handshake with an alert (Java
    # sends bad_certificate; TLS 1.3 has certificate_required) and logs why.
    anonymous = dataclasses.replace(settings, ssl_cert_file=None, ssl_key_file=None)
    error, why = _refused(cluster, cluster.ssl_bootstrap, anonymous)
    assert isinstance(error, KafkaConnectionError), repr(error)
    assert _tls_alert(error) in {"SSLV3_ALERT_BAD_CERTIFICATE",
                                 "TLSV13_ALERT_CERTIFICATE_REQUIRED"}, repr(error.__cause__)
    assert why == "SSL handshake failed", why
    # 'toolwire broker status' probes an external cluster with the same settings.
    done = _toolwire("broker", "status", env={
        **{k: v for k, v in os.environ.items() if not k.startswith("TOOLWIRE_")},
        "KAFKA_BOOTSTRAP_SERVERS": cluster.ssl_bootstrap,
        "TOOLWIRE_SECURITY_PROTOCOL": "SSL",
        "TOOLWIRE_SSL_CA_FILE": str(cluster.certs["ca.pem"]),
        "TOOLWIRE_SSL_CERT_FILE": str(cluster.certs["client.pem"]),
        "TOOLWIRE_SSL_KEY_FILE": str(cluster.certs["client.key"])})
    assert done.returncode == 0, done.stdout + done.stderr
    assert orjson.loads(done.stdout)["ready"] is True
