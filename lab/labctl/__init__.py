# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""labctl, the lab's tooling (run lab/bin/labctl, or python3 -m labctl from lab/). Its modules:

  cli         the command line: argparse subcommands, each calling the modules below
  common      paths under .lab/, output and log, running commands, hashing and writing files
  deps        the controller's Debian packages
  image       the Debian 12 systemd base image (debootstrap, setup.sh, podman import)
  packages    the stub .deb packages from the data in lab/packages/ (rocm.json, layouts.json)
  repository  the signed apt repository under .lab/repo (indexes, the throwaway GPG key)
  hosts       podman: the network, the repository server, the hosts, SSH keys and known_hosts
  wheelhouse  the lab's wheelhouses: the engine's, SGLang's, the gateway router's (.lab/repo/wheels/)
  model       the tiny Llama the lab engine serves (.lab/repo/models/)
  buildstage  the build stage's stand-in sources and pinned build tools (.lab/repo/sources/, buildtools/)
"""
