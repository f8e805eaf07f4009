"""``distrl sim serve`` and ``distrl sim expert``: the simulated device farm from the shell."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal

from distrl_tasks.cli.common import add_config_flags, config_path
from distrl_tasks.config import Config, ConfigError, load_config


def add_sim_commands(sub: argparse._SubParsersAction) -> None:
    sim = sub.add_parser("sim", help="the simulated Android device farm")
    simsub = sim.add_subparsers(dest="sim_command", required=True, metavar="{serve,expert}")

    serve = simsub.add_parser("serve", help="serve simulated devices over the ADB protocol")
    serve.add_argument("--port", type=int, help="TCP port (default: sim.port; 0 = any free)")
    serve.add_argument("--devices", type=int, help="number of devices (default: sim.devices)")
    serve.add_argument("--seed", type=int, help="farm seed (default: sim.seed)")
    serve.add_argument("--host", help="bind address (default: sim.host, loopback)")
    serve.add_argument("--latency", action="store_true", help="enable emulator-like latency")
    serve.add_argument("--faults", action="store_true", help="enable injected faults")
    serve.add_argument(
        "--dynamics",
        metavar="PROFILE",
        help="live-world profile: static, live or hostile (default: sim.dynamics.profile)",
    )
    serve.add_argument(
        "--allow-kill", action="store_true", help="let `adb kill-server` stop this server"
    )
    serve.add_argument(
        "--exit-with",
        type=int,
        metavar="PID",
        help="stop when process PID is gone (the process that owns this farm)",
    )
    add_config_flags(serve)
    serve.set_defaults(func=_cmd_sim_serve)

    expert = simsub.add_parser("expert", help="run the scripted expert on one device")
    expert.add_argument("--port", type=int, required=True, help="port of `distrl sim serve`")
    expert.add_argument("--serial", required=True, help="device serial, e.g. emulator-5554")
    expert.add_argument("--goal", required=True, help="AitW goal text")
    expert.add_argument("--mistake-rate", type=float, default=0.0, help="per-step error rate")
    expert.add_argument("--seed", type=int, default=0, help="seed of the expert's mistakes")
    expert.set_defaults(func=_cmd_sim_expert)


def _sim_config(args: argparse.Namespace) -> tuple[Config, int]:
    """The config with the serve flags applied, and the port to bind (0 allowed here)."""
    overrides = list(args.overrides or [])
    for key, value in (("devices", args.devices), ("seed", args.seed), ("host", args.host)):
        if value is not None:
            overrides.append(f"sim.{key}={json.dumps(value)}")
    if args.dynamics is not None:
        overrides.append(f"sim.dynamics.profile={json.dumps(args.dynamics)}")
    if args.latency:
        overrides.append("sim.latency.enabled=true")
    if args.faults:
        overrides.append("sim.faults.enabled=true")
    if args.port is not None and args.port != 0:
        overrides.append(f"sim.port={args.port}")
    cfg = load_config(config_path(args), overrides)
    port = 0 if args.port == 0 else cfg.sim.port
    return cfg, port


def _cmd_sim_serve(args: argparse.Namespace) -> int:
    if args.port is not None and not 0 <= args.port < 65536:
        raise ConfigError(f"--port: must be a TCP port (0..65535), got {args.port}")
    cfg, port = _sim_config(args)  # config errors surface before the simulator is imported
    sim = cfg.sim

    from distrl_tasks.sim.adb_server import AdbServer  # lazy: the simulator, PIL (CLI start-up)
    from distrl_tasks.tasks.goal_farms import device_farm  # lazy: the simulator (CLI start-up)

    farm = device_farm(sim.devices, sim.seed, sim, dynamics=sim.dynamics.profile)

    async def serve() -> None:
        server = AdbServer(
            farm,
            host=sim.host,
            port=port,
            allow_kill=args.allow_kill,
            backlog=sim.listen_backlog,
            idle_timeout_s=sim.idle_timeout_s,
        )
        try:
            bound = await server.start()
        except OSError as exc:
            raise ConfigError(f"cannot listen on {sim.host}:{port}: {exc.strerror}") from exc
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if args.exit_with is not None:
            watchdog = asyncio.create_task(_stop_when_gone(args.exit_with, stop))
        serials = farm.serials
        extras = [
            name
            for name, on in (("latency", sim.latency.enabled), ("faults", sim.faults.enabled))
            if on
        ]
        print(
            f"distrl sim: {len(serials)} devices ({serials[0]} .. {serials[-1]}) on "
            f"{sim.host}:{bound}, seed {sim.seed}, dynamics {sim.dynamics.profile}"
            + (f", {'+'.join(extras)} on" if extras else "")
            + f"; try: adb -P {bound} devices",
            flush=True,
        )
        try:
            await server.serve_until(stop)
        finally:
            if args.exit_with is not None:
                watchdog.cancel()
            await server.close()
        print("distrl sim: stopped", flush=True)

    asyncio.run(serve())
    return 0


async def _stop_when_gone(pid: int, stop: asyncio.Event, poll_s: float = 0.5) -> None:
    """Set ``stop`` once process ``pid`` has exited: a farm never outlives its owner."""
    from distrl_tasks.stages.farm import process_alive  # lazy: adbutils (CLI start-up)

    while not stop.is_set():
        if not process_alive(pid):
            print(f"distrl sim: owner process {pid} is gone; stopping", flush=True)
            stop.set()
            return
        await asyncio.sleep(poll_s)


def _cmd_sim_expert(args: argparse.Namespace) -> int:
    from distrl_tasks.tasks.expert import run_expert  # lazy: adbutils (CLI start-up)

    if not 0.0 <= args.mistake_rate < 1.0:
        raise ConfigError(f"--mistake-rate: must be in [0, 1), got {args.mistake_rate}")
    result = run_expert(
        host="127.0.0.1",
        port=args.port,
        serial=args.serial,
        goal=args.goal,
        mistake_rate=args.mistake_rate,
        seed=args.seed,
    )
    print(json.dumps(result), flush=True)
    return 0
