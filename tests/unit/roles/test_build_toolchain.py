# -*- coding: utf-8 -*-
# Copyright: llmfleet.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where each system takes the compiler and the Python of a vLLM release's recipe (plugins/module_utils/
_build_toolchain.py), and the apt sources the roles write for the PPAs, as deb822_repository renders them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from role_files import load_yaml, trusted  # the collection loader is installed by role_files

from ansible_collections.llmfleet.rocm.plugins.filter.build import build_toolchain  # noqa: E402
from ansible_collections.llmfleet.rocm.plugins.module_utils import _build_toolchain  # noqa: E402

RELEASES = load_yaml('roles/engine_build/vars/main.yml')['_engine_build_releases']
DEADSNAKES = 'F23C5A6CF475977595C89F51BA6932366A755776'
TOOLCHAIN_PPA = '60C317803A41BA51845E371A1E9377A2BA9EF27F'


def _plan(system, release='0.32.0', **asked):
    return build_toolchain(system, release=release, releases=RELEASES, **asked)


def test_the_recipe_table_says_gcc_13_and_python_3_12_for_the_releases_built_from_source():
    """Upstream's images (Dockerfile.rocm_base) take gcc 13 for torch and Python 3.12; the toolchain follows them."""
    for release in ('0.30.0', '0.31.0', '0.32.0'):
        assert _build_toolchain.recipe_needs(release, RELEASES) == {
            'release': release, 'python_version': '3.12', 'gcc': '13',
            'python_range': ((3, 10), (3, 15)) if release != '0.32.0' else ((3, 11), (3, 15))}
    assert _build_toolchain.recipe_needs('', RELEASES) == {}


def test_ubuntu_22_04_takes_gcc_13_and_python_3_12_from_the_ppas_upstream_uses():
    plan = _plan('Ubuntu-22')
    assert plan['problems'] == [] and plan['fallback'] is None
    assert plan['python'] == {'version': '3.12', 'path': '/usr/bin/python3.12', 'packages': ['python3.12', 'python3.12-venv'],
                              'dev_packages': ['python3.12-dev'], 'source': 'deadsnakes', 'given': False}
    assert plan['gcc'] == {'version': '13', 'cc': 'gcc-13', 'cxx': 'g++-13', 'packages': ['gcc-13', 'g++-13'],
                           'source': 'ubuntu-toolchain-r-test'}
    assert plan['env'] == {'CC': 'gcc-13', 'CXX': 'g++-13'}
    assert plan['packages'] == ['python3.12', 'python3.12-venv', 'python3.12-dev', 'gcc-13', 'g++-13']
    assert plan['apt_sources'] == [
        {'name': 'deadsnakes', 'uris': ['https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu'], 'suites': ['jammy'],
         'components': ['main'], 'fingerprint': DEADSNAKES, 'keyring': '/etc/apt/keyrings/llmfleet-deadsnakes.asc',
         'key_url': 'https://keyserver.ubuntu.com/pks/lookup?op=get&options=mr&search=0x' + DEADSNAKES},
        {'name': 'ubuntu-toolchain-r-test', 'uris': ['https://ppa.launchpadcontent.net/ubuntu-toolchain-r/test/ubuntu'],
         'suites': ['jammy'], 'components': ['main'], 'fingerprint': TOOLCHAIN_PPA,
         'keyring': '/etc/apt/keyrings/llmfleet-ubuntu-toolchain-r-test.asc',
         'key_url': 'https://keyserver.ubuntu.com/pks/lookup?op=get&options=mr&search=0x' + TOOLCHAIN_PPA},
    ]


def test_ubuntu_24_04_takes_both_from_its_archive():
    plan = _plan('Ubuntu-24')
    assert plan['problems'] == [] and plan['apt_sources'] == []
    assert plan['python']['path'] == '/usr/bin/python3' and plan['python']['version'] == '3.12'
    assert plan['gcc']['source'] is None and plan['env'] == {'CC': 'gcc-13', 'CXX': 'g++-13'}


def test_debian_12_has_neither_and_is_told_what_to_set():
    plan = _plan('Debian-12')
    # Its own Python 3.11 is inside vLLM 0.32's requires-python (>=3.11): used, and said.
    assert plan['python']['version'] == '3.11' and plan['python']['path'] == '/usr/bin/python3'
    assert 'Debian 12 cannot give vLLM 0.32.0\'s Python 3.12' in plan['fallback']
    assert plan['gcc'] is None and plan['env'] == {}
    assert len(plan['problems']) == 1 and 'Debian 12 cannot give gcc 13' in plan['problems'][0]
    assert 'toolchain_gcc_version to the version it has ("12")' in plan['problems'][0]
    assert _plan('Debian-12', gcc_version='12')['problems'] == []
    assert _plan('Debian-12', gcc_version='12')['env'] == {'CC': 'gcc-12', 'CXX': 'g++-12'}


def test_a_python_outside_the_range_and_not_in_the_table_is_refused_with_the_fix(monkeypatch):
    # vLLM 0.32 on a system whose own Python is below its range and which has no other: a Python you provide.
    table = dict(_build_toolchain.SYSTEMS)
    table['Ubuntu-22'] = dict(table['Ubuntu-22'], pythons={})
    monkeypatch.setattr(_build_toolchain, 'SYSTEMS', table)
    plan = _plan('Ubuntu-22')
    assert plan['python'] is None
    assert ('its own Python 3.10 is outside the release\'s range >=3.11,<3.15' in plan['problems'][0]
            and 'toolchain_python to the path of a Python 3.12 you provide' in plan['problems'][0])


@pytest.mark.parametrize('asked, problem', [
    ({'python_version': '3.11'}, 'Ubuntu 22.04 cannot give Python 3.11'),
    ({'python_version': '3.10'}, 'Python 3.10 (/usr/bin/python3) is outside vLLM 0.32.0\'s range >=3.11,<3.15'),
    ({'python_version': 'three'}, 'toolchain_python_version \'three\' is not a Python version'),
    ({'gcc_version': '14'}, 'Ubuntu 22.04 cannot give gcc 14 (toolchain_gcc_version is 14)'),
    ({'gcc_version': '13.2'}, 'toolchain_gcc_version \'13.2\' is not a gcc major version'),
], ids=['python-3.11-not-on-jammy', 'python-3.10-below-vllm-0.32', 'python-not-a-version', 'gcc-14-not-on-jammy',
        'gcc-not-a-major'])
def test_what_is_asked_must_be_in_the_table(asked, problem):
    assert any(problem in message for message in _plan('Ubuntu-22', **asked)['problems'])


def test_a_python_given_by_path_is_taken_as_it_is():
    plan = _plan('Debian-12', python_path='/opt/python3.12/bin/python3.12', gcc_version='12')
    assert plan['python'] == {'version': None, 'path': '/opt/python3.12/bin/python3.12', 'packages': [],
                              'dev_packages': [], 'source': 'user', 'given': True}
    assert plan['problems'] == [] and plan['packages'] == ['gcc-12', 'g++-12']


def test_no_release_is_the_systems_own_python_and_compiler():
    for system, version in (('Ubuntu-22', '3.10'), ('Ubuntu-24', '3.12'), ('Debian-12', '3.11')):
        plan = _plan(system, release='')
        assert plan['python']['version'] == version and plan['python']['path'] == '/usr/bin/python3'
        assert plan['gcc'] is None and plan['env'] == {} and plan['apt_sources'] == [] and plan['problems'] == []


def test_the_engine_asks_for_the_python_only():
    plan = _plan('Ubuntu-22', who='engine')
    assert plan['gcc'] is None and plan['env'] == {}
    assert plan['packages'] == ['python3.12', 'python3.12-venv'], 'the headers only with engine_install_compiler'
    assert [source['name'] for source in plan['apt_sources']] == ['deadsnakes']
    assert 'engine_python_version' in _plan('Ubuntu-22', who='engine', python_version='3.9')['problems'][0]


def test_a_fleet_behind_a_mirror_takes_the_ppas_from_it_and_keeps_the_pin():
    sources = _plan('Ubuntu-22', mirror_url='http://mirror-1:8080/')['apt_sources']
    assert [(s['uris'], s['key_url'], s['fingerprint']) for s in sources] == [
        (['http://mirror-1:8080/apt/deadsnakes'], 'http://mirror-1:8080/apt/deadsnakes/key.asc', DEADSNAKES),
        (['http://mirror-1:8080/apt/ubuntu-toolchain-r-test'], 'http://mirror-1:8080/apt/ubuntu-toolchain-r-test/key.asc',
         TOOLCHAIN_PPA)]


def test_an_unknown_system_has_no_row():
    assert 'CentOS-9 has no row in the toolchain table' in _plan('CentOS-9')['problems'][0]


def test_every_ppa_has_its_source_and_a_full_fingerprint():
    for name, ppa in _build_toolchain.PPAS.items():
        assert ppa['uri'].startswith('https://ppa.launchpadcontent.net/') and ppa['page'].startswith('https://launchpad.net/~')
        assert len(ppa['fingerprint']) == 40 and ppa['fingerprint'] == ppa['fingerprint'].upper()
        assert ppa['key_url'].endswith('0x' + ppa['fingerprint'])
        assert name in _build_toolchain.SOURCES and ppa['fingerprint'] in _build_toolchain.SOURCES[name]
    for row in _build_toolchain.SYSTEMS.values():
        assert set(row['pythons'].values()) | set(row['gccs'].values()) <= set(_build_toolchain.PPAS)


def _rendered_sources(system):
    """The deb822 stanzas the base role's apt_sources task writes on a system, through deb822_repository's own formatting
    (its field names, lists and its handling of signed_by: neither a file nor a URL is written as it is)."""
    from ansible.modules import deb822_repository as module
    task = [task for task in load_yaml('roles/_common/tasks/apt_sources.yml')
            if 'ansible.builtin.deb822_repository' in task][0]
    args = trusted(task['ansible.builtin.deb822_repository'])
    stanzas = []
    for item in _plan(system)['apt_sources']:
        rendered = Templar(loader=DataLoader(), variables={'item': item}).template(args)
        lines = []
        for key in sorted(rendered):
            value = rendered[key]
            if key == 'signed_by':
                _changed, filename, data = module.write_signed_by_key(None, value, 'llmfleet-' + item['name'])
                value = filename or data
            elif isinstance(value, list):
                value = module.format_list(value)
            lines.append('%s: %s' % (module.format_field_name(key), value))
        stanzas.append(lines)
    return stanzas


def test_the_rendered_apt_sources_of_ubuntu_22_04_pin_each_ppas_key():
    assert _rendered_sources('Ubuntu-22') == [
        ['Architectures: amd64', 'Components: main', 'X-Repolib-Name: llmfleet-deadsnakes',
         'Signed-By: /etc/apt/keyrings/llmfleet-deadsnakes.asc ' + DEADSNAKES, 'Suites: jammy', 'Types: deb',
         'URIs: https://ppa.launchpadcontent.net/deadsnakes/ppa/ubuntu'],
        ['Architectures: amd64', 'Components: main', 'X-Repolib-Name: llmfleet-ubuntu-toolchain-r-test',
         'Signed-By: /etc/apt/keyrings/llmfleet-ubuntu-toolchain-r-test.asc ' + TOOLCHAIN_PPA, 'Suites: jammy', 'Types: deb',
         'URIs: https://ppa.launchpadcontent.net/ubuntu-toolchain-r/test/ubuntu'],
    ]
    assert _rendered_sources('Ubuntu-24') == [] and _rendered_sources('Debian-12') == []


def test_each_key_is_fetched_to_the_keyring_the_source_names():
    tasks = load_yaml('roles/_common/tasks/apt_sources.yml')
    fetch = [task for task in tasks if 'ansible.builtin.get_url' in task][0]['ansible.builtin.get_url']
    item = _plan('Ubuntu-22')['apt_sources'][0]
    rendered = Templar(loader=DataLoader(), variables={'item': item}).template(trusted(fetch))
    assert rendered['url'] == item['key_url'] and rendered['dest'] == item['keyring'] and rendered['mode'] == '0644'


def test_the_toolchain_role_installs_from_the_plan():
    """roles/toolchain: the plan's packages with the role's own, its apt sources through the base role's task file."""
    variables = {'llmfleet_platform': {'key': 'Ubuntu-22', 'mirror_url': ''}, 'role_path': 'roles/toolchain'}
    variables.update(trusted(load_yaml('roles/toolchain/defaults/main.yml')))
    variables.update(trusted(load_yaml('roles/toolchain/vars/main.yml')))
    variables['toolchain_vllm_release'] = '0.32.0'
    variables['_toolchain_releases'] = RELEASES
    templar = Templar(loader=DataLoader(), variables=variables)
    assert templar.template(trust_as_template('{{ _toolchain_python }}')) == '/usr/bin/python3.12'
    plan = templar.template(trust_as_template('{{ _toolchain_plan }}'))
    assert plan['env'] == {'CC': 'gcc-13', 'CXX': 'g++-13'}
    install = load_yaml('roles/toolchain/tasks/install.yml')
    assert install[0]['ansible.builtin.import_role'] == {'name': 'llmfleet.rocm._common', 'tasks_from': 'apt_sources'}
    assert install[0]['vars']['_common_apt_sources'] == '{{ _toolchain_plan.apt_sources }}'
    assert '_toolchain_plan.packages' in install[1]['ansible.builtin.apt']['name']


def _engine_value(expression, system, **overrides):
    variables = {'llmfleet_platform': {'key': system, 'mirror_url': ''}, 'role_path': 'roles/engine'}
    variables.update(trusted(load_yaml('roles/engine/defaults/main.yml')))
    variables.update(trusted(load_yaml('roles/engine/vars/main.yml')))
    variables['_engine_releases'] = RELEASES
    variables.update(overrides)
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template('{{ %s }}' % expression))


def test_the_engine_role_gives_ubuntu_22_04_python_3_12_from_deadsnakes():
    assert _engine_value('_engine_python', 'Ubuntu-22') == '/usr/bin/python3.12'
    assert _engine_value('_engine_os_packages', 'Ubuntu-22') == ['python3-venv', 'python3.12', 'python3.12-venv', 'libnuma1']
    assert _engine_value('_engine_compiler_packages', 'Ubuntu-22') == ['gcc', 'g++', 'python3-dev', 'python3.12-dev']
    sources = _engine_value('_engine_python_plan.apt_sources', 'Ubuntu-22')
    assert [(s['name'], s['fingerprint']) for s in sources] == [('deadsnakes', DEADSNAKES)]
    install = load_yaml('roles/engine/tasks/install.yml')
    assert install[0]['ansible.builtin.import_role'] == {'name': 'llmfleet.rocm._common', 'tasks_from': 'apt_sources'}
    assert install[0]['vars']['_common_apt_sources'] == '{{ _engine_python_plan.apt_sources }}'
    venv = [task for task in load_yaml('roles/engine/tasks/venv.yml') if task['name'] == 'Create the venv'][0]
    assert venv['ansible.builtin.command']['argv'][0] == '{{ _engine_python }}'


def test_the_engine_role_keeps_the_system_python_where_it_serves():
    # Debian 12 (the lab): its own python3 is inside vLLM 0.32's range; the venv's marker keeps /usr/bin/python3.
    assert _engine_value('_engine_python', 'Debian-12') == '/usr/bin/python3'
    assert _engine_value('_engine_python_plan.apt_sources', 'Debian-12') == []
    assert _engine_value('_engine_os_packages', 'Debian-12') == ['python3-venv', 'python3', 'libnuma1']
    # SGLang follows no vLLM recipe; the lab's vllm==0.32.0+cpu is release 0.32.0.
    assert _engine_value('_engine_python', 'Ubuntu-22', engine_name='sglang', engine_version='0.5.23') == '/usr/bin/python3'
    assert _engine_value('_engine_python', 'Ubuntu-22', engine_version='0.32.0+cpu') == '/usr/bin/python3.12'
    # A path is taken as it is.
    assert _engine_value('_engine_python', 'Ubuntu-22', engine_python='/opt/py/bin/python3') == '/opt/py/bin/python3'
