"""`make deb` (issue 12 point 1): settee_<version>_<arch>.deb holds the stripped binary of this
build, a systemd unit running it as `settee`, /etc/settee/local.ini as a conffile, and maintainer
scripts that create the user and /var/lib/settee; as root it installs and purges cleanly."""
import grp
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import BIN, main

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def run(*args, **kw):
    return subprocess.run(list(args), capture_output=True, text=True, check=True, **kw).stdout


class Deb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp(prefix="settee-deb-")
        build = os.path.dirname(os.path.abspath(BIN))
        cls.deb = run("bash", os.path.join(ROOT, "scripts", "make_deb.sh"), build, cls.out).strip()
        cls.version = run(BIN, "--version").split()[1]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def field(self, name):
        return run("dpkg-deb", "-f", self.deb, name).strip()

    def test_name_and_control_fields(self):
        arch = run("dpkg", "--print-architecture").strip()
        debversion = self.version.replace("-", "~")
        self.assertEqual(os.path.basename(self.deb), f"settee_{debversion}_{arch}.deb")
        self.assertEqual(self.field("Package"), "settee")
        self.assertEqual(self.field("Version"), debversion)
        depends = self.field("Depends")
        for pkg in ("adduser", "liblmdb0", "libcapnp-0.9.2", "libcaf-core0.17", "libssl3"):
            self.assertIn(pkg, depends)
        # Versioned, as dpkg-shlibdeps finds them.
        self.assertRegex(depends, r"libc6 \(>= 2\.\d+\)")
        self.assertRegex(depends, r"libcaf-core0\.17 \(>= 0\.17\.\d+\)")

    def test_md5sums_hardening_and_a_sandboxed_unit(self):
        tree = os.path.join(self.out, "hardened")
        control = os.path.join(self.out, "control-md5")
        run("dpkg-deb", "-x", self.deb, tree)
        run("dpkg-deb", "-e", self.deb, control)
        with open(os.path.join(control, "md5sums")) as f:
            listed = [line.split("  ", 1)[1] for line in f.read().splitlines()]
        self.assertIn("usr/bin/settee", listed)
        self.assertNotIn("etc/settee/local.ini", listed)  # a conffile: dpkg tracks it itself
        run("md5sum", "--quiet", "-c", os.path.join(control, "md5sums"), cwd=tree)
        binary = os.path.join(tree, "usr", "bin", "settee")
        self.assertIn("BIND_NOW", run("readelf", "-d", binary))
        self.assertIn("GNU_RELRO", run("readelf", "-l", binary))
        self.assertIn("Position-Independent Executable", run("readelf", "-h", binary))
        imports = run("nm", "-D", binary)
        self.assertIn("__stack_chk_fail", imports)
        self.assertRegex(imports, r"__\w+_chk\b")  # _FORTIFY_SOURCE's checked functions
        self.assertNotIn(".comment", run("readelf", "-S", binary))
        unit = os.path.join(tree, "lib", "systemd", "system", "settee.service")
        self.assertIsNotNone(shutil.which("systemd-analyze"), "systemd-analyze is missing: run scripts/setup.sh --tests")
        out = subprocess.run(["systemd-analyze", "security", "--offline=true", unit], capture_output=True,
                             text=True).stdout
        level = float(re.search(r"Overall exposure level for settee\.service: ([\d.]+)", out).group(1))
        self.assertLessEqual(level, 3.0, out)

    def test_contents_and_the_binary_is_this_build(self):
        listing = run("dpkg-deb", "-c", self.deb)
        for path in ("./usr/bin/settee", "./lib/systemd/system/settee.service", "./etc/settee/local.ini"):
            self.assertIn(path, listing)
        self.assertRegex(listing, r"drwxr-xr-x root/root +0 .* \./\n")
        tree = os.path.join(self.out, "tree")
        run("dpkg-deb", "-x", self.deb, tree)
        self.assertEqual(run(os.path.join(tree, "usr", "bin", "settee"), "--version").split()[1], self.version)
        with open(os.path.join(tree, "lib", "systemd", "system", "settee.service")) as f:
            unit = f.read()
        self.assertIn("User=settee", unit)
        self.assertIn("ExecStart=/usr/bin/settee --data-dir /var/lib/settee --config /etc/settee/local.ini", unit)
        control = os.path.join(self.out, "control")
        run("dpkg-deb", "-e", self.deb, control)
        with open(os.path.join(control, "conffiles")) as f:
            self.assertEqual(f.read().strip(), "/etc/settee/local.ini")

    def test_a_tagged_tree_must_hold_that_version(self):
        # A copy of the packaging files in a git tree whose HEAD carries a tag of another version.
        tree = os.path.join(self.out, "tree")
        shutil.copytree(os.path.join(ROOT, "scripts"), os.path.join(tree, "scripts"))
        shutil.copytree(os.path.join(ROOT, "packaging"), os.path.join(tree, "packaging"))
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@example.org")
        for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"], ["tag", "v9.9.9"]):
            run("git", "-C", tree, *args, env=env)
        r = subprocess.run(["bash", os.path.join(tree, "scripts", "make_deb.sh"), os.path.dirname(os.path.abspath(BIN)),
                            self.out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"HEAD is tagged v9.9.9 but", r.stderr)
        self.assertIn(f"says {self.version}", r.stderr)

    def test_lintian_finds_no_error(self):
        # scripts/setup.sh --tests installs lintian: no error, no warning.
        self.assertIsNotNone(shutil.which("lintian"), "lintian is missing: run scripts/setup.sh --tests")
        r = subprocess.run(["lintian", "--tag-display-limit", "0", self.deb], capture_output=True, text=True)
        tags = [line for line in r.stdout.splitlines() if line[:2] in ("E:", "W:")]
        self.assertEqual(tags, [], r.stdout)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("dpkg"), "installing needs root")
    def test_installs_and_purges_cleanly(self):
        subprocess.run(["dpkg", "--purge", "settee"], capture_output=True)  # a left-over from a failed run
        try:
            run("dpkg", "-i", self.deb)
            self.assertEqual(run("/usr/bin/settee", "--version").split()[1], self.version)
            self.assertIn("settee", run("getent", "passwd", "settee"))
            st = os.stat("/var/lib/settee")
            self.assertEqual(oct(st.st_mode & 0o777), "0o750")
            self.assertTrue(os.path.exists("/etc/settee/local.ini"))
            # settee may replace a plain-text admin password there by its hash; nobody else reads it.
            st = os.stat("/etc/settee/local.ini")
            self.assertEqual(oct(st.st_mode & 0o777), "0o660")
            self.assertEqual(grp.getgrgid(st.st_gid).gr_name, "settee")
            self.assertEqual(oct(os.stat("/etc/settee").st_mode & 0o777), "0o770")
        finally:
            run("dpkg", "--purge", "settee")
        self.assertFalse(os.path.exists("/usr/bin/settee"))
        self.assertFalse(os.path.exists("/etc/settee/local.ini"))


if __name__ == "__main__":
    main()
