# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the tests of the roles' own files share: the collection's plugins by their FQCN (Ansible's collection loader
over .collections, as a run finds them), a role file read as YAML, and a role's text trusted as templates the way a
run trusts a role's files (values given on top stay data), and a temporary upstream behind its server."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import os
import shutil
import sys
import tempfile
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import yaml

from ansible.template import trust_as_template
from ansible.utils.collection_loader import AnsibleCollectionConfig
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..'))

# Installed before the collection's modules are imported (the plugin loader then finds the same modules). Modules
# other tests imported as plain packages are set aside first (their tests keep what they hold), or the plugin loader
# finds no filter of theirs.
if AnsibleCollectionConfig.collection_finder is None:
    for _name in [name for name in sys.modules if name == 'ansible_collections' or name.startswith('ansible_collections.')]:
        del sys.modules[_name]
    _AnsibleCollectionFinder(paths=[os.path.join(ROOT, '.collections')])._install()


def load_yaml(path):
    """A file of the collection (a path under its root) as YAML; {} for an empty one."""
    with open(os.path.join(ROOT, path)) as handle:
        return yaml.safe_load(handle) or {}


def trusted(value):
    """A role's own text, every string of it trusted as a template."""
    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return dict((key, trusted(item)) for key, item in value.items())
    if isinstance(value, list):
        return [trusted(item) for item in value]
    return value


class _Upstream(SimpleHTTPRequestHandler):
    """The upstream's server, and the proxy in front of it: each request's target is kept in server.seen, and one in
    proxy form (an absolute URL) is served as its path. With server.proxy_for set, only a request in proxy form for that
    host is served (the host resolves nowhere: only the proxy reaches it); any other is refused with 403."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.server.seen.append(self.path)
        if self.server.proxy_for and not self.path.startswith('http://%s:' % self.server.proxy_for):
            self.send_error(403, 'not through the proxy')
            return None
        if self.path.startswith('http://'):
            self.path = urlsplit(self.path).path
        return SimpleHTTPRequestHandler.do_GET(self)


@contextlib.contextmanager
def upstream_server(prefix, proxy_for=None):
    """A temporary directory (mode 0755, removed afterwards) whose `upstream` subdirectory is served on loopback while
    the block runs: yields (base, served directory, server); server.seen lists the requests' targets and
    'http://127.0.0.1:<server.server_address[1]>' is the proxy. proxy_for: see _Upstream."""
    base = tempfile.mkdtemp(prefix=prefix)
    os.chmod(base, 0o755)
    served = os.path.join(base, 'upstream')
    os.makedirs(served)
    server = ThreadingHTTPServer(('127.0.0.1', 0), partial(_Upstream, directory=served))
    server.seen = []
    server.proxy_for = proxy_for
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield base, served, server
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(base, ignore_errors=True)
