# PyInstaller runtime hook of the wkw-viewer bundle (packaging/wkw-viewer.spec).
#
# pyqtgraph imports PySide6.QtOpenGL and PySide6.QtOpenGLWidgets when it is itself imported,
# but draws with OpenGL only when told to (its "useOpenGL" option), which wkw-viewer never
# does.  The bundle leaves the two bindings out (about 9 MB) and puts placeholders in their
# place: importing them works, and any use of what they hold fails loudly.
import sys
import types


def _placeholder(module_name: str) -> types.ModuleType:
    module = types.ModuleType(module_name)
    module.__doc__ = "Placeholder: this bundle has no OpenGL bindings (never used)."

    def unavailable(*_args: object, **_kwargs: object) -> None:
        raise ImportError(f"{module_name} is not part of the wkw-viewer bundle")

    def __getattr__(name: str) -> type:
        if name.startswith("__"):
            raise AttributeError(name)
        # A class, so that class statements naming it as a base still run at import.
        return type(name, (), {"__init__": unavailable, "__module__": module_name})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


for _name in ("PySide6.QtOpenGL", "PySide6.QtOpenGLWidgets"):
    sys.modules.setdefault(_name, _placeholder(_name))
