"""How every Kafka client of Toolwire connects, from the
:class:`~toolwire.config.settings.Settings` alone.

One place turns the connection settings (``TOOLWIRE_SECURITY_PROTOCOL``, ``TOOLWIRE_SASL_*``,
``TOOLWIRE_SSL_*``) into

- :func:`client_options`: keyword arguments for aiokafka's ``AIOKafkaProducer``,
  ``AIOKafkaConsumer`` and ``AIOKafkaAdminClient`` (``security_protocol``, ``sasl_mechanism``,
  ``sasl_plain_username``, ``sasl_plain_password``, ``ssl_context``), which the publisher,
  ``toolwire consume``, ``toolwire dlq release``, ``toolwire topics apply`` and the broker
  probe pass through;
- :func:`faust_credentials`: Faust's ``broker_credentials`` for the worker, whose consumer,
  producer and topic creation then connect the same way.

Importing it reads nothing; a call reads the password file and the PEM files, and a file that
cannot be used raises :class:`ValueError` naming the variable to fix (never the password).
:func:`verify` makes one connection with the options, so that a worker with a wrong password
stops at once with a message instead of retrying.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from aiokafka.helpers import create_ssl_context

from toolwire.config.settings import (
    DEFAULT_MECHANISM,
    SASL_PROTOCOLS,
    TLS_PROTOCOLS,
    Settings,
)

__all__ = [
    "SecurityError",
    "client_options",
    "describe_failure",
    "faust_credentials",
    "sasl_password",
    "ssl_context",
    "verify",
]

#: Variables an authentication failure may be the fault of.
SASL_VARIABLES = ("TOOLWIRE_SASL_USERNAME, TOOLWIRE_SASL_PASSWORD (or "
                  "TOOLWIRE_SASL_PASSWORD_FILE) and TOOLWIRE_SASL_MECHANISM")


#: OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH.
_HOSTNAME_MISMATCH = 62


class SecurityError(RuntimeError):
    """A connection was refused for a reason of security (authentication, TLS); the message
    names the setting to check."""


def sasl_password(settings: Settings) -> str:
    """The SASL password: ``TOOLWIRE_SASL_PASSWORD``, else the file's content without its
    trailing newline."""
    if settings.sasl_password is not None:
        return settings.sasl_password.reveal()
    path = settings.sasl_password_file
    if path is None:
        raise ValueError("TOOLWIRE_SASL_PASSWORD or TOOLWIRE_SASL_PASSWORD_FILE is needed "
                         f"with TOOLWIRE_SECURITY_PROTOCOL={settings.security_protocol}")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ValueError(f"TOOLWIRE_SASL_PASSWORD_FILE={str(path)!r}: cannot read it: "
                         f"{why}") from None
    password = text.removesuffix("\n").removesuffix("\r")
    if not password:
        raise ValueError(f"TOOLWIRE_SASL_PASSWORD_FILE={str(path)!r} is empty: write the "
                         "password into it")
    return password


def _no_key_password() -> str:
    # Without a callback, OpenSSL would ask for the pass phrase on the terminal and a worker
    # would hang there.
    raise ValueError("encrypted")


def ssl_context(settings: Settings) -> ssl.SSLContext:
    """The TLS context of a client: the CA file (else the system's CAs), the client
    certificate and key if given, hostname checking unless turned off."""
    ca = settings.ssl_ca_file
    try:
        context: ssl.SSLContext = create_ssl_context(cafile=None if ca is None else str(ca))
    except (ssl.SSLError, OSError) as exc:
        raise ValueError(f"TOOLWIRE_SSL_CA_FILE={str(ca)!r}: not usable as PEM CA "
                         f"certificates: {exc}") from None
    cert, key = settings.ssl_cert_file, settings.ssl_key_file
    if cert is not None and key is not None:
        try:
            context.load_cert_chain(str(cert), str(key), password=_no_key_password)
        except (ssl.SSLError, OSError, ValueError) as exc:
            why = ("the key is encrypted; give an unencrypted PEM key"
                   if isinstance(exc, ValueError) else str(exc))
            raise ValueError(f"TOOLWIRE_SSL_CERT_FILE={str(cert)!r} and TOOLWIRE_SSL_KEY_FILE="
                             f"{str(key)!r}: not a usable PEM certificate and key: "
                             f"{why}") from None
    if not settings.ssl_check_hostname:
        context.check_hostname = False  # the chain is still verified (CERT_REQUIRED)
    return context


def client_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments that make an aiokafka client connect as the settings say.

    ``{"security_protocol": "PLAINTEXT"}`` for a plaintext cluster, so passing them is always
    right. Builds a fresh TLS context and reads the password file on each call.
    """
    protocol = settings.security_protocol
    options: dict[str, Any] = {"security_protocol": protocol}
    if protocol in TLS_PROTOCOLS:
        options["ssl_context"] = ssl_context(settings)
    if protocol in SASL_PROTOCOLS:
        options.update(sasl_mechanism=settings.sasl_mechanism or DEFAULT_MECHANISM,
                       sasl_plain_username=settings.sasl_username,
                       sasl_plain_password=sasl_password(settings))
    return options


def faust_credentials(settings: Settings) -> Any:
    """Faust's ``broker_credentials`` for the settings (``None`` for PLAINTEXT): a
    ``faust.SASLCredentials`` (with the TLS context for SASL_SSL) or ``faust.SSLCredentials``.
    """
    protocol = settings.security_protocol
    if protocol == "PLAINTEXT":
        return None
    import faust  # only the worker needs Faust; the other clients must not import it

    context = ssl_context(settings) if protocol in TLS_PROTOCOLS else None
    if protocol in SASL_PROTOCOLS:
        # SASL_SSL with a context, SASL_PLAINTEXT without one.
        return faust.SASLCredentials(
            username=settings.sasl_username, password=sasl_password(settings),
            ssl_context=context, mechanism=settings.sasl_mechanism or DEFAULT_MECHANISM)
    return faust.SSLCredentials(context)


def _why(exc: BaseException) -> str:
    """The exception as one phrase, its class named once (aiokafka's texts name it already)."""
    name, text = type(exc).__name__, str(exc)
    return text if name in text else f"{name}: {text}" if text else name


def describe_failure(exc: BaseException, settings: Settings, bootstrap: str) -> str:
    """What a failed connection means and which setting to check (no secret in it)."""
    from aiokafka import errors

    protocol = settings.security_protocol
    if isinstance(exc, (errors.SaslAuthenticationFailed, errors.AuthenticationFailedError,
                        errors.IllegalSaslStateError)):
        return (f"authentication failed at {bootstrap} as user {settings.sasl_username!r} "
                f"with {settings.sasl_mechanism or DEFAULT_MECHANISM} ({_why(exc)}): check "
                f"{SASL_VARIABLES}")
    if isinstance(exc, errors.UnsupportedSaslMechanismError):
        return (f"{bootstrap} refused the SASL mechanism ({_why(exc)}): set "
                "TOOLWIRE_SASL_MECHANISM to one its listener enables")
    if isinstance(exc, ssl.SSLCertVerificationError):
        if exc.verify_code == _HOSTNAME_MISMATCH:
            return (f"TLS: the certificate of {bootstrap} is not for that host name "
                    f"({exc.verify_message}): connect to a name it holds in "
                    "KAFKA_BOOTSTRAP_SERVERS, or set TOOLWIRE_SSL_CHECK_HOSTNAME=false")
        return (f"TLS: the certificate of {bootstrap} is not trusted ({exc.verify_message}): "
                "set TOOLWIRE_SSL_CA_FILE to the PEM file of the CA that signed it")
    if isinstance(exc, ssl.SSLError):
        return (f"TLS handshake with {bootstrap} failed ({_why(exc)}): does its listener "
                f"speak TOOLWIRE_SECURITY_PROTOCOL={protocol}?")
    if isinstance(exc, TimeoutError):
        return (f"no answer from {bootstrap} in time with TOOLWIRE_SECURITY_PROTOCOL="
                f"{protocol}: check KAFKA_BOOTSTRAP_SERVERS and that its listener speaks "
                f"{protocol}")
    return (f"cannot connect to {bootstrap} with TOOLWIRE_SECURITY_PROTOCOL={protocol} "
            f"({_why(exc)}): check KAFKA_BOOTSTRAP_SERVERS and that its listener speaks "
            f"{protocol}")


async def verify(bootstrap: str, options: dict[str, Any], settings: Settings, *,
                 timeout: float = 15.0) -> None:
    """Connect once to a bootstrap server with ``options``: TLS handshake, SASL
    authentication and a metadata request. Returns at the first server that accepts;
    raises :class:`SecurityError` saying what to fix when none does."""
    from aiokafka.conn import create_conn
    from aiokafka.protocol.metadata import MetadataRequest

    hosts = [h.strip().removeprefix("kafka://") for h in bootstrap.split(",") if h.strip()]
    failures: list[BaseException] = []
    for host in hosts:
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit():  # no port: Kafka's default
            name, port = host, "9092"
        conn = None
        try:
            conn = await asyncio.wait_for(
                create_conn(name.strip("[]"), int(port), request_timeout_ms=int(timeout * 1000),
                            **options), timeout)
            await asyncio.wait_for(conn.send(MetadataRequest([])), timeout)
            return
        except Exception as exc:  # OSError, KafkaError, ssl.SSLError, TimeoutError
            failures.append(exc)
        finally:
            if conn is not None:
                conn.close()
    if not failures:
        raise SecurityError("no Kafka bootstrap servers: set KAFKA_BOOTSTRAP_SERVERS")
    # The most telling failure: authentication, then TLS, then the rest.
    from aiokafka import errors

    def rank(exc: BaseException) -> int:
        if isinstance(exc, (errors.SaslAuthenticationFailed, errors.AuthenticationFailedError,
                            errors.IllegalSaslStateError, errors.UnsupportedSaslMechanismError)):
            return 0
        return 1 if isinstance(exc, ssl.SSLError) else 2

    worst = min(failures, key=rank)
    raise SecurityError(describe_failure(worst, settings, bootstrap))
