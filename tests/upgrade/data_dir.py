"""One data dir run by release OLD and by this one in turn: a test case whose tests each get a fresh
data dir and start nodes of either build on it (`run_node(self.old_bin)` for the older release)."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from harness import Node, NodeTest  # noqa: E402
from releases import binary  # noqa: E402


class DataDirTest(NodeTest):
    OLD = None  # the release tag, e.g. "v0.1.0"

    @classmethod
    def setUpClass(cls):
        cls.old_bin = binary(cls.OLD)
        cls.node = None

    @classmethod
    def tearDownClass(cls):
        pass

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="settee-up-")
        self.data = os.path.join(self.dir, "data")
        os.makedirs(self.data)
        self.addCleanup(shutil.rmtree, self.dir, True)  # cleanups run last-first: after the nodes stop

    def run_node(self, bin=None):
        node = Node(data_dir=self.data, bin=bin).start()
        self.addCleanup(node.stop)
        return node
