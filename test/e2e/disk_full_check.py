#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A full disk and a read-only mount, as an ordinary user can make them: in a user and mount
namespace (unshare -Urm), a 64 KiB tmpfs. Checks that ofrun
  - refuses a checkpoint folder without room for one checkpoint before its first step,
  - refuses a read-only checkpoint folder before its first step,
  - stops at a metrics write that fails, saves its checkpoint elsewhere, names the file in one
    line, exits 1, and leaves no empty metrics file behind,
  - stops at a checkpoint written in the background that does not fit (room for one, not two),
    naming the file in one line, exit 1, keeping the checkpoint before it whole (it evaluates)
    and leaving no partial folder.
Where namespaces are not allowed (some containers) it exits 77, which ctest reports as skipped.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    if subprocess.run(["unshare", "-Urm", "true"], capture_output=True).returncode != 0:
        print("disk_full_check: SKIPPED: user and mount namespaces are not allowed here (unshare -Urm)")
        return SKIP
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
            print("FAIL:", what)

    with tempfile.TemporaryDirectory() as work:
        plan = os.path.join(work, "t.ofp")
        r = subprocess.run([os.path.join(args.bin, "ofc"), os.path.join(FIXTURES, "mlp.onnx"), "-o", plan, "--train",
                            "--loss", "cross_entropy"], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr)
            return 1
        small = os.path.join(work, "small")
        os.mkdir(small)
        data = "npy:{},{}".format(os.path.join(FIXTURES, "mlp_input.npy"), os.path.join(FIXTURES, "mlp_labels.npy"))
        ofrun = [os.path.join(args.bin, "ofrun"), plan, "--data", data]

        def in_namespace(setup, cmd, size="64k"):
            """Runs `cmd` after `setup` (shell, in the namespace); returns (status, stdout, stderr)."""
            script = "mount -t tmpfs -o size={size} tmpfs {d} && {setup} exec {cmd}".format(
                size=size, d=shlex.quote(small), setup=setup, cmd=" ".join(shlex.quote(c) for c in cmd))
            p = subprocess.run(["unshare", "-Urm", "sh", "-c", script], capture_output=True, text=True, timeout=240)
            return p.returncode, p.stdout, p.stderr

        # 1. No room for one checkpoint (~2.4 MB of MLP weights and momentum): refused first.
        ck = os.path.join(small, "ck")
        status, out, err = in_namespace("", ofrun + ["--steps", "50", "--checkpoint", ck])
        check(status == 1, "no room: exit {} (want 1)".format(status))
        check(re.fullmatch(r"ofrun: error: {}: [0-9.]+ MiB free, one checkpoint needs [0-9.]+ MiB\n".format(re.escape(ck)), err),
              "no room: stderr {!r}".format(err))
        check("trained" not in out, "no room: it trained first")

        # 2. A read-only folder: refused first.
        status, out, err = in_namespace("mkdir {d}/ck && mount -o remount,ro {d} &&".format(d=shlex.quote(small)),
                                        ofrun + ["--steps", "50", "--checkpoint", ck])
        check(status == 1, "read-only: exit {} (want 1)".format(status))
        check(err == "ofrun: error: {}: cannot write the checkpoint folder: Read-only file system\n".format(ck),
              "read-only: stderr {!r}".format(err))
        check("trained" not in out, "read-only: it trained first")

        # 3. Metrics on a disk that fills: the run stops at the failing write, saves its checkpoint
        # (on another disk), names the file in one line and exits 1.
        metrics = os.path.join(small, "m.jsonl")
        big_ck = os.path.join(work, "ck")
        status, out, err = in_namespace("", ofrun + ["--steps", "20000", "--metrics", metrics, "--checkpoint", big_ck])
        check(status == 1, "metrics full: exit {} (want 1)".format(status))
        m = re.fullmatch(r"ofrun: error: {}: cannot write: No space left on device \(stopped after step (\d+), checkpoint {}/step-(\d+)\)\n".format(
            re.escape(metrics), re.escape(big_ck)), err.splitlines(keepends=True)[-1] if err else "")
        check(m is not None and m.group(1).lstrip("0") == m.group(2).lstrip("0"), "metrics full: stderr {!r}".format(err[-300:]))
        check(len([l for l in err.splitlines() if "error" in l]) == 1, "metrics full: more than one error line")
        check(os.path.exists(os.path.join(big_ck, "latest")), "metrics full: no checkpoint saved")

        # 4. A disk already full: the first metrics write fails, and no empty file is left.
        status, out, err = in_namespace("(dd if=/dev/zero of={d}/fill bs=4k 2>/dev/null || true) &&".format(d=shlex.quote(small)),
                                        ofrun + ["--steps", "5", "--metrics", metrics])
        check(status == 1, "full from the start: exit {} (want 1)".format(status))
        last = err.splitlines()[-1] if err else ""
        check(last.startswith("ofrun: error: {}: cannot write: No space left on device (stopped after step ".format(metrics)),
              "full from the start: stderr {!r}".format(err))
        # The tmpfs vanished with the namespace; look inside it with a listing taken there.
        status, listing, _ = in_namespace("(dd if=/dev/zero of={d}/fill bs=4k 2>/dev/null || true) && ({c} >/dev/null 2>&1; true) &&".format(
            d=shlex.quote(small), c=" ".join(shlex.quote(c) for c in ofrun + ["--steps", "5", "--metrics", metrics])), ["ls", small])
        check(listing.split() == ["fill"], "full from the start: the folder holds {!r}".format(listing.split()))

        # 5. Room for one checkpoint, not two (the one `latest` names stays while the next is
        # written): the second save, written in the background, fails. The run stops naming the
        # file, the first checkpoint stays whole and the failed one leaves nothing.
        one = os.path.join(work, "one")
        r = subprocess.run(ofrun + ["--steps", "1", "--checkpoint", one], capture_output=True, text=True)
        check(r.returncode == 0, "one checkpoint: exit {}".format(r.returncode))
        size_k = sum(os.path.getsize(os.path.join(one, "step-00000001", f)) for f in os.listdir(os.path.join(one, "step-00000001"))) // 1024
        q = lambda c: " ".join(shlex.quote(x) for x in c)
        script = ("{run}; echo STATUS=$?; echo LATEST=$(cat {ck}/latest); echo LIST=$(ls -A {ck} | tr '\\n' ' '); "
                  "{ev} >/dev/null 2>&1; echo EVAL=$?").format(
            run=q(ofrun + ["--steps", "50", "--checkpoint", ck, "--checkpoint-every", "1"]), ck=shlex.quote(ck),
            ev=q(ofrun + ["--eval", "--checkpoint", ck]))
        status, out, err = in_namespace("", ["sh", "-c", script], size="{}k".format(size_k * 3 // 2))
        check("STATUS=1" in out, "second save full: {!r}".format(out))
        errors = [l for l in err.splitlines() if "error" in l]
        check(len(errors) == 1 and re.search(r"snapshot.*: {}/\.partial-step-00000002/\w+\.safetensors: write failed: "
                                             r"No space left on device$".format(re.escape(ck)), errors[0]) is not None,
              "second save full: stderr {!r}".format(err[-400:]))
        check("LATEST=step-00000001" in out, "second save full: latest {!r}".format(out))
        check("LIST=.lock latest step-00000001\n" in out, "second save full: the folder holds {!r}".format(out))
        check("EVAL=0" in out, "second save full: the first checkpoint does not evaluate: {!r}".format(out))

    if failures:
        print("disk_full_check: {} failure(s)".format(len(failures)))
        return 1
    print("disk_full_check: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
