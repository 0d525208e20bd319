"""``toolwire assemble``: one captured body offline → the record the pipeline would publish."""

from __future__ import annotations

import argparse
import sys

import orjson

from toolwire.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    HelpFormatter,
    Subparsers,
    UsageError,
    tool_names,
    wire_name,
)
from toolwire.config.settings import limits_from_env
from toolwire.core import Options, Provenance, assemble
from toolwire.core.wires import AUTO, DEFAULT_WIRE, SUPPORTED_WIRES

PROG = "toolwire assemble"


def add(sub: Subparsers) -> None:
    p = sub.add_parser(
        "assemble",
        help="assemble one captured response body offline and print its record",
        description=(
            "Read the raw bytes of one streamed LLM response body (SSE or NDJSON, exactly as "
            "received) and print one JSON record: the assembled response, or the dead letter "
            "that explains why it cannot be trusted. It is the same record the pipeline "
            "publishes, so any pipeline decision can be reproduced offline from a capture. "
            "The record is one JSON line, indented only on a terminal or with --pretty."),
        epilog=(
            "exit status: 0 assembled (also truncated or provider errors, see error_code), "
            "1 dead letter (see reason and detail), 2 usage error or unreadable input.\n"
            "limits: TOOLWIRE_MAX_RESPONSE_BYTES, TOOLWIRE_MAX_LINE_BYTES, "
            "TOOLWIRE_MAX_ARGUMENTS_BYTES, TOOLWIRE_MAX_PROVIDER_FIELDS_BYTES, "
            "TOOLWIRE_MAX_CALLS, TOOLWIRE_MAX_CHOICES."),
        formatter_class=HelpFormatter,
    )
    p.add_argument("capture", help="file with the raw body, or - for standard input")
    p.add_argument("--tools", type=tool_names, metavar="A,B",
                   help="tool names the request declared; other names are dead-lettered "
                        "as unknown_tool (an empty value declares none)")
    p.add_argument("--strict", action="store_true",
                   help="dead-letter any identity conflict (a call whose id or name changes "
                        "to another non-empty value) instead of keeping the last one")
    p.add_argument("--synthesize-ids", action="store_true",
                   help="give a call that ends without an id a deterministic one (flagged "
                        "id_synthesized, derived from --request or else the response id) "
                        "instead of dead-lettering it as missing_identity; the pipeline does "
                        "this for the providers named in TOOLWIRE_SYNTHESIZE_IDS. A name is "
                        "never made up")
    p.add_argument("--end-without-done", action="store_true",
                   help="the provider never sends data: [DONE] (Writer, Perplexity's older "
                        "chat.completion chunks): a body that ends after every choice sent "
                        "its finish reason is complete (repairs.ended_without_done) instead "
                        "of a stream_closed dead letter; a body cut before that stays "
                        "stream_closed. The pipeline does this for the providers named in "
                        "TOOLWIRE_END_WITHOUT_DONE")
    p.add_argument("--wire", type=wire_name, default=AUTO, metavar="NAME",
                   help="the wire the body is written in: one of "
                        f"{', '.join([*SUPPORTED_WIRES, AUTO])} (default {AUTO}: told by the "
                        "body's first event); the pipeline reads it from the chunks' wire "
                        f"header, whose absence means {DEFAULT_WIRE}")
    p.add_argument("--request", dest="request_id", help="request id to put in the record")
    p.add_argument("--session", dest="session_id", help="session id to put in the record")
    p.add_argument("--provider", help="provider name to put in the record")
    p.add_argument("--model", help="model name (default: the model the chunks name)")
    layout = p.add_mutually_exclusive_group()
    layout.add_argument("--pretty", action="store_true",
                        help="indent the record even when the output is not a terminal")
    layout.add_argument("--compact", action="store_true",
                        help="one line even on a terminal")
    p.set_defaults(handler=run)




def run(args: argparse.Namespace) -> int:
    try:
        if args.capture == "-":
            body = sys.stdin.buffer.read()
        else:
            with open(args.capture, "rb") as f:
                body = f.read()
    except OSError as exc:
        raise UsageError(f"cannot read {args.capture}: {exc.strerror}", PROG) from None
    try:
        limits = limits_from_env()
    except ValueError as exc:
        raise UsageError(str(exc), PROG) from None
    record = assemble(
        body,
        Options(declared_tools=None if args.tools is None else frozenset(args.tools),
                strict=args.strict, synthesize_ids=args.synthesize_ids,
                end_without_done=args.end_without_done, limits=limits, wire=args.wire),
        Provenance(request_id=args.request_id, session_id=args.session_id,
                   provider=args.provider, model=args.model),
    )
    pretty = args.pretty or (sys.stdout.isatty() and not args.compact)
    sys.stdout.buffer.write(orjson.dumps(record, option=orjson.OPT_INDENT_2 if pretty else 0)
                            + b"\n")
    sys.stdout.flush()
    return EXIT_OK if record["outcome"] == "assembled" else EXIT_NEGATIVE
