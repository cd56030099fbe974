#!/usr/bin/env python3
"""The page's scripts as the reporter embeds them ($BUILD/page/*.js, which
the Makefile makes from reporter/out/page/*.js) pass `node --check`
(Debian's nodejs): a syntax error in one would otherwise show only when a
page is opened. That they run without error on real pages is
test_page_load's part."""
import glob
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rstest import BUILD, ROOT, check, finish, run, skip  # noqa: E402


def main():
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        skip("page scripts", "no node (Debian package nodejs; tools/scripts/deps.sh installs it)")
        finish()
    sources = sorted(glob.glob(os.path.join(ROOT, "reporter", "out", "page", "*.js")))
    check("page scripts: reporter/out/page holds scripts", sources, "no .js file there")
    for src in sources:
        name = os.path.basename(src)
        built = os.path.join(BUILD, "page", name)
        if not check("page scripts: %s embedded" % name, os.path.exists(built), built + " missing (make)"):
            continue
        p = run([node, "--check", built])
        check("page scripts: %s passes node --check" % name, p.returncode == 0,
              p.stderr.decode(errors="replace")[-400:])
    finish()


if __name__ == "__main__":
    main()
