"""Print, as JSON, the host's Python version and the version of each package named in argv:
from the package's metadata, else its `__version__`, else null.

Runs on the host's own python, which may be old: nothing newer than Python 3.8 here.
"""

import importlib
import json
import platform
import sys
from importlib import metadata

found = {"python": platform.python_version()}
for name in sys.argv[1:]:
    try:
        found[name] = metadata.version(name)
    except Exception:
        try:
            found[name] = importlib.import_module(name.split("-")[0]).__version__
        except Exception:
            found[name] = None
print(json.dumps(found))
