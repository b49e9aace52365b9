"""Earlier releases for upgrade and downgrade tests: built from their commits on main, once, and
cached in the build dir (build/releases/<tag>/build/settee).

A release is named by its tag but read by the commit the tag points at, recorded below when the tag
is made: a clone of main without tags (as CI makes) still holds every release commit."""
import fcntl
import os
import shutil
import subprocess

SOURCE = os.environ.get("SETTEE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
RELEASES = os.environ.get("SETTEE_RELEASES_DIR", os.path.join(SOURCE, "build", "releases"))

# tag -> the commit it names (`git rev-parse <tag>^{commit}`); add a line with every release.
COMMITS = {
    "v0.1.0": "daed9d9fcc9d5229ed48c8425e69e06decdd920c",
    "v0.2.0": "18f98da0efcf8f6a72790f278025f6a6067255bb",
    "v0.3.0": "92e88689ac30b09fc413dbd639de907760387dc4",
    "v0.4.0": "7b9244622322f888e9b717ee3cfbc60b5c157164",
}


def binary(tag):
    """The settee binary of release `tag`, building it on first use (a few minutes on 2 cores)."""
    out = os.path.join(RELEASES, tag)
    exe = os.path.join(out, "build", "settee")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build even when several tests start together
        if os.path.exists(exe):
            return exe
        src = os.path.join(out, "src")
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(src)
        def has_commit():
            return subprocess.run(["git", "-C", SOURCE, "cat-file", "-e", COMMITS[tag] + "^{commit}"],
                                  capture_output=True).returncode == 0

        if not has_commit():  # a shallow clone: its origin has the history
            subprocess.run(["git", "-C", SOURCE, "fetch", "--quiet", "--unshallow"], capture_output=True)
        got = subprocess.run(["git", "-C", SOURCE, "archive", COMMITS[tag]], capture_output=True)
        if got.returncode != 0:
            raise RuntimeError(f"cannot read release {tag} (commit {COMMITS[tag]}) from {SOURCE}; a clone "
                               "with the history of main is needed, not a shallow one: "
                               + got.stderr.decode(errors="replace"))
        archive = got.stdout
        subprocess.run(["tar", "-x", "-C", src], input=archive, check=True)
        build = os.path.join(out, "build")
        subprocess.run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=Release"], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["cmake", "--build", build, "--target", "settee", "-j2"], check=True, stdout=subprocess.DEVNULL)
        return exe
