"""A minimal PEP 517 / PEP 660 build backend for this pure-Python package.

It needs nothing but the standard library, so `pip install bindings/python` works without
downloading setuptools or wheel (offline machines, CI). It builds:
  - a wheel: libgpt/*.py plus the .dist-info metadata,
  - an sdist: pyproject.toml, README.md, this file, libgpt/ and tests/,
  - an editable wheel (pip install -e): a .pth file pointing at this directory.
Project metadata is read from pyproject.toml (tomllib on 3.11+, else a small reader of the
few keys used here).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "libgpt"
TAG = "py3-none-any"


def _project():
    text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()
    try:
        import tomllib
        return tomllib.loads(text)["project"]
    except ImportError:
        project = {}
        section = None
        for line in text.splitlines():
            m = re.match(r"^\[(.+)\]\s*$", line)
            if m:
                section = m.group(1)
                continue
            m = re.match(r'^(\w[\w-]*)\s*=\s*"(.*)"\s*$', line)
            if m and section == "project":
                project[m.group(1)] = m.group(2)
        return project


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: %s" % p["name"], "Version: %s" % p["version"],
             "Summary: %s" % p.get("description", ""), "License: MIT"]
    if p.get("requires-python"):
        lines.append("Requires-Python: %s" % p["requires-python"])
    lines += ["Provides-Extra: numpy", 'Requires-Dist: numpy; extra == "numpy"']
    readme = os.path.join(HERE, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        body = "\n" + open(readme, encoding="utf-8").read()
    return "\n".join(lines) + "\n" + body, p["name"], p["version"]


def _package_files():
    pkg = os.path.join(HERE, PACKAGE)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") and not name.startswith("_build_config"):
            yield "%s/%s" % (PACKAGE, name), os.path.join(pkg, name)


def _digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write_wheel(directory, entries):
    metadata, name, version = _metadata()
    dist_info = "%s-%s.dist-info" % (name, version)
    filename = "%s-%s-%s.whl" % (name, version, TAG)
    entries = list(entries) + [
        ("%s/METADATA" % dist_info, metadata.encode("utf-8")),
        ("%s/WHEEL" % dist_info, ("Wheel-Version: 1.0\nGenerator: libgpt _build_backend\nRoot-Is-Purelib: true\n"
                                  "Tag: %s\n" % TAG).encode()),
        ("%s/top_level.txt" % dist_info, (PACKAGE + "\n").encode()),
    ]
    record = "".join("%s,%s,%d\n" % (arc, _digest(data), len(data)) for arc, data in entries)
    record += "%s/RECORD,,\n" % dist_info
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in entries:
            z.writestr(arc, data)
        z.writestr("%s/RECORD" % dist_info, record)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = [(arc, open(path, "rb").read()) for arc, path in _package_files()]
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [("__editable__.libgpt.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    _, name, version = _metadata()
    base = "%s-%s" % (name, version)
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for rel in ["pyproject.toml", "README.md", "_build_backend.py"]:
            tar.add(os.path.join(HERE, rel), arcname="%s/%s" % (base, rel))
        for sub in [PACKAGE, "tests"]:
            for root, dirs, files in os.walk(os.path.join(HERE, sub)):
                dirs[:] = [d for d in dirs if d != "__pycache__"]
                for f in sorted(files):
                    if f.endswith((".py", ".c")) and not f.startswith("_build_config"):
                        full = os.path.join(root, f)
                        tar.add(full, arcname="%s/%s" % (base, os.path.relpath(full, HERE)))
        metadata, _, _ = _metadata()
        info = tarfile.TarInfo("%s/PKG-INFO" % base)
        data = metadata.encode("utf-8")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return filename
