"""The wires Toolwire reads, by name: one module per provider API, one registry naming them.

A wire is chosen by name (``Options.wire``), as httpx picks a content decoder from
``SUPPORTED_DECODERS`` by the ``Content-Encoding`` it names: the registry maps each name to the
wire's class, and each response gets a new instance (a wire may keep per-response state). A
name that is not registered is refused with :class:`UnknownWire`, whose message lists the valid
names, rather than falling back to a default that would read the body under the wrong rules.

``auto`` lets the body say which wire it is. With one wire registered there is nothing to
detect and ``auto`` is that wire; with several, :class:`~toolwire.core.wires._auto.Auto`, made
with the registry's wires, asks them: the framings they read tell a body by its opening bytes,
and each wire recognizes its own first event (:meth:`Wire.recognizes`). It then hands the body
over to that wire (:meth:`~toolwire.core.assembly.Assembler.hand_over`: the assembler reads
``asm.wire`` on every slice, and the decision reads the response's policy, which the
hand-over brings). Only this module reads the registry: the assembler is given a wire.
"""

from __future__ import annotations

from typing import Final

from toolwire.core.wires._auto import Auto
from toolwire.core.wires._base import FinishPolicy, ProviderError, Wire, WireTarget
from toolwire.core.wires.anthropic_messages import AnthropicMessages
from toolwire.core.wires.bedrock_converse import BedrockConverse
from toolwire.core.wires.bedrock_invoke import BedrockInvoke
from toolwire.core.wires.chat_completions import ChatCompletions
from toolwire.core.wires.gemini import Gemini
from toolwire.core.wires.ollama_chat import OllamaChat
from toolwire.core.wires.openai_responses import OpenAIResponses

__all__ = ["AUTO", "DEFAULT_WIRE", "SUPPORTED_WIRES", "FinishPolicy", "ProviderError",
           "UnknownWire", "Wire", "WireTarget", "check_wire_name", "resolve_wire", "wire_named"]

#: Every wire by its name.
SUPPORTED_WIRES: Final[dict[str, type[Wire]]] = {
    ChatCompletions.name: ChatCompletions,
    AnthropicMessages.name: AnthropicMessages,
    OpenAIResponses.name: OpenAIResponses,
    Gemini.name: Gemini,
    OllamaChat.name: OllamaChat,
    BedrockConverse.name: BedrockConverse,
    BedrockInvoke.name: BedrockInvoke,
}
DEFAULT_WIRE: Final = ChatCompletions.name
#: The name that lets the body say which wire it is (see :func:`resolve_wire`).
AUTO: Final = "auto"


class UnknownWire(ValueError):
    """A wire name that is not registered; the message lists the valid ones."""

    def __init__(self, name: object, valid: list[str]) -> None:
        super().__init__(f"unknown wire {name!r}: expected one of "
                         f"{', '.join(repr(v) for v in valid)}")
        self.name = name
        self.valid = valid


def wire_named(name: str) -> Wire:
    """A new instance of the wire registered as ``name``."""
    wire = SUPPORTED_WIRES.get(name) if type(name) is str else None
    if wire is None:
        raise UnknownWire(name, list(SUPPORTED_WIRES))
    return wire()


def check_wire_name(name: str) -> None:
    """Refuse a name :func:`resolve_wire` would refuse, without building a wire."""
    if name != AUTO and (type(name) is not str or name not in SUPPORTED_WIRES):
        raise UnknownWire(name, [*SUPPORTED_WIRES, AUTO])


def resolve_wire(name: str) -> Wire:
    """The wire for ``name``: a registered name, or ``auto`` (the wire the first event tells;
    the only wire, when one is registered)."""
    wire = SUPPORTED_WIRES.get(name) if type(name) is str else None
    if wire is not None:  # once per response: the common case first
        return wire()
    check_wire_name(name)
    if len(SUPPORTED_WIRES) == 1:
        (only,) = SUPPORTED_WIRES.values()
        return only()
    return Auto(SUPPORTED_WIRES, DEFAULT_WIRE)
