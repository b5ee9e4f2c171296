#!/bin/sh
# Runs inside the debootstrap chroot of the lab image (part of the image recipe: any change
# here changes the image tag). Turns a minbase Debian 12 into a host whose PID 1 is systemd
# inside a podman container. $LAB_MIRROR is the Debian mirror the controller uses.
set -eu

# apt sources as on an installed Debian 12 server (deb822, main + updates + security).
rm -f /etc/apt/sources.list
cat > /etc/apt/sources.list.d/debian.sources <<EOF
Types: deb
URIs: ${LAB_MIRROR}
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${LAB_MIRROR_SECURITY}
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF

# Identity is per container: systemd creates a machine id at first boot, sshd host keys
# come from the lab (or from the ExecStartPre below when the lab did not provide any).
: > /etc/machine-id
rm -f /var/lib/dbus/machine-id /etc/hostname /etc/ssh/ssh_host_*
mkdir -p /etc/systemd/system/ssh.service.d
cat > /etc/systemd/system/ssh.service.d/10-lab-hostkeys.conf <<'EOF'
# lab: create host keys that the lab did not copy in (ssh-keygen -A only adds missing ones)
[Service]
ExecStartPre=
ExecStartPre=/usr/bin/ssh-keygen -A
ExecStartPre=/usr/sbin/sshd -t
EOF

# On an installed server udev's postinst creates the "render" group (owner of /dev/kfd and
# /dev/dri/renderD*); the image has no udev, so create it here.
getent group render >/dev/null || groupadd --system render

# Units that have no meaning in a container (no kernel, no consoles, no block devices of
# its own) or that would race the tests for the dpkg lock.
for unit in \
    getty.target console-getty.service getty@tty1.service \
    systemd-firstboot.service systemd-remount-fs.service \
    dev-hugepages.mount sys-fs-fuse-connections.mount sys-kernel-config.mount \
    sys-kernel-debug.mount sys-kernel-tracing.mount proc-sys-fs-binfmt_misc.automount \
    systemd-binfmt.service systemd-modules-load.service systemd-udevd.service \
    systemd-udev-trigger.service systemd-hwdb-update.service \
    apt-daily.timer apt-daily-upgrade.timer; do
    ln -sf /dev/null "/etc/systemd/system/${unit}"
done

systemctl set-default multi-user.target
systemctl enable ssh.service

# Smaller image: no caches, no docs. The apt lists stay so the first "apt-get update"
# on a lab host only revalidates them.
apt-get clean
rm -rf /usr/share/doc/* /usr/share/man/* /usr/share/info/* /var/cache/debconf/*-old \
    /var/log/*.log /var/log/apt/* /tmp/* /var/tmp/*
