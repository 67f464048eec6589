"""What the checks of the installed tools share: a line per check (ok or
not ok, counted), the tools run without the caller's Momento credentials,
and the script's end, which fails it if any check failed or none ran."""
import os
import subprocess
import sys

# Not the caller's account: with neither variable a tool serves itself
# from an embedded momento-local.
env = {k: v for k, v in os.environ.items() if k not in ("MOMENTO_API_KEY", "MOMENTO_ENDPOINT")}
passed = failures = 0
failed_names = []
# How much of a failed check's detail to print (None: all of it).
detail_limit = None


def check(name, cond, detail=""):
    global failures, passed
    if cond:
        passed += 1
        print(f"ok - {name}")
    else:
        failures += 1
        failed_names.append(name)
        print(f"not ok - {name} {str(detail)[:detail_limit]}")


def run(args, timeout=120):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=env)


def finish():
    # The failed checks' names again at the end: a CI log often keeps only
    # a run's last lines, and a rare failure must be named to be mended.
    for name in failed_names:
        print(f"failed: {name}")
    print(f"{passed} passed, {failures} failed")
    sys.exit(1 if failures or not passed else 0)


def start_server(server, *args):
    """A separate momento-local (the binary `server`, with `args`) on a
    free port: (process, "host:port")."""
    srv = subprocess.Popen([server, "--port", "0", *args], stdout=subprocess.PIPE, text=True)
    return srv, srv.stdout.readline().strip().replace("listening on ", "")


def stop_server(srv):
    """Stops it; returns the RPC counters it prints on the way out."""
    srv.terminate()
    return srv.communicate(timeout=10)[0]
