"""A minimal IDE-plugin-style client for codarisd, in Python with grpcio.

It generates its stubs from the repository's .proto files with grpc_tools (no system protoc),
then calls the standard health service, Daemon.Status, and server reflection over the Unix socket.
With --script it also runs one turn of a scripted session and answers its card as an IDE plugin
would: with the card's answer_secret from the Turn stream (a wrong one is refused first).
"""

import argparse
import importlib
import os
import sys


def generate_stubs(proto_root: str, out: str) -> None:
    from grpc_tools import protoc
    import grpc_tools

    os.makedirs(out, exist_ok=True)
    well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    protos = [
        "codaris/v1/types.proto",
        "codaris/v1/daemon.proto",
        "codaris/v1/sessions.proto",
        "codaris/v1/tools.proto",
        "codaris/v1/ledger.proto",
        # `CreateSessionRequest.mcp_servers` (an editor's servers) takes `Mcp`'s
        # `AddServerRequest`, so the sessions stubs import these.
        "codaris/v1/mcp.proto",
    ]
    args = ["protoc", f"-I{proto_root}", f"-I{well_known}", f"--python_out={out}",
            f"--grpc_python_out={out}"] + protos
    if protoc.main(args) != 0:
        raise SystemExit("grpc_tools.protoc failed")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket", required=True)
    parser.add_argument("--proto-root", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--script", help="a scripted-provider script whose turn raises a card")
    args = parser.parse_args()

    generate_stubs(args.proto_root, args.out)
    sys.path.insert(0, args.out)

    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    daemon_pb2 = importlib.import_module("codaris.v1.daemon_pb2")
    daemon_pb2_grpc = importlib.import_module("codaris.v1.daemon_pb2_grpc")

    # gRPC C-core names a Unix-socket channel by its percent-encoded path, which HTTP/2 servers
    # reject as an :authority; any plain name works, and localhost says what it is.
    options = [("grpc.default_authority", "localhost")]
    with grpc.insecure_channel(f"unix://{args.socket}", options=options) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        overall = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
        print("health", health_pb2.HealthCheckResponse.ServingStatus.Name(overall.status))
        daemon_health = health.Check(
            health_pb2.HealthCheckRequest(service="codaris.v1.Daemon"), timeout=10)
        print("health codaris.v1.Daemon",
              health_pb2.HealthCheckResponse.ServingStatus.Name(daemon_health.status))

        status = daemon_pb2_grpc.DaemonStub(channel).Status(daemon_pb2.StatusRequest(), timeout=10)
        print(f"status pid={status.pid} api={status.api_version}")

        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        services = []
        for response in reflection.ServerReflectionInfo(iter([request]), timeout=10):
            services.extend(s.name for s in response.list_services_response.service)
        print("reflection", " ".join(sorted(services)))

        if args.script:
            answer_a_card(channel, args.script)
    return 0


def answer_a_card(channel, script: str) -> None:
    import grpc

    sessions_pb2 = importlib.import_module("codaris.v1.sessions_pb2")
    sessions_pb2_grpc = importlib.import_module("codaris.v1.sessions_pb2_grpc")
    sessions = sessions_pb2_grpc.SessionsStub(channel)
    session = sessions.CreateSession(sessions_pb2.CreateSessionRequest(script=script), timeout=10)
    events = sessions.Turn(sessions_pb2.TurnRequest(session_id=session.id, text="go"), timeout=60)
    for event in events:
        if event.WhichOneof("event") != "card":
            continue
        card = event.card

        def answer(secret: str):
            return sessions.AnswerCard(sessions_pb2.AnswerCardRequest(
                session_id=session.id, card_id=card.id,
                answer=sessions_pb2.CARD_ANSWER_ALLOW_ONCE, answer_secret=secret), timeout=60)

        try:
            answer("0" * len(card.answer_secret))
            print("card wrong-secret accepted")
        except grpc.RpcError as err:
            print("card wrong-secret", err.code().name)
        reply = answer(card.answer_secret)
        print(f"card accepted={reply.accepted} grant={'yes' if reply.grant_id else 'no'}")


if __name__ == "__main__":
    sys.exit(main())
