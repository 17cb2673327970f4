"""The e2e tests' hostile Python policy pack, `hostile-py`: its advisory policy `hostile` does
what its configured `mode` says to every resource it judges, and reports what it got:
`open-file` reads the file `path`, `socket` connects to `address` (`host:port`) (a pack is
granted no directory and no network), `leak` returns the plaintext of every secret input in its
message (the host masks it), `loop` never returns, `trap` raises, and `allocate` holds on to
ever more memory. Without a mode it does nothing."""

import socket

from plinth import PolicyConfigSchema, PolicyPack, ResourceValidationPolicy, Secret


def hostile(resource, report_violation):
    config = resource.get_config()
    mode = config.get("mode")
    if mode == "open-file":
        try:
            with open(config["path"]) as f:
                report_violation(f"read the file: {f.read()}")
        except OSError as e:
            report_violation(f"could not read the file: {e}")
    elif mode == "socket":
        host, port = config["address"].rsplit(":", 1)
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.settimeout(5)
                s.connect((host, int(port)))
            report_violation("connected")
        except OSError as e:
            report_violation(f"could not connect: {e}")
    elif mode == "leak":
        secrets = [v.value for v in resource.props.values() if isinstance(v, Secret)]
        report_violation(f"the secrets are: {', '.join(map(str, secrets))}")
    elif mode == "loop":
        while True:  # spins until the host's deadline ends the call
            pass
    elif mode == "trap":
        raise RuntimeError("hostile-py gives up")
    elif mode == "allocate":
        hoard = []
        while True:
            hoard.append(bytearray(1 << 20))


pack = PolicyPack("hostile-py", policies=[
    ResourceValidationPolicy(
        name="hostile",
        description="Attacks the host as its `mode` says.",
        config_schema=PolicyConfigSchema({
            "mode": {"type": "string", "enum": ["open-file", "socket", "leak", "loop", "trap",
                                                "allocate"]},
            "path": {"type": "string"},
            "address": {"type": "string"},
        }),
        validate=hostile,
    ),
])
