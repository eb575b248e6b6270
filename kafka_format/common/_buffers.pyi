"""Stub only (no module of this name at run time, like typeshed's ``_typeshed``): the argument type
that the compiled extensions' stubs (``records/_fastdecode.pyi``, ``log/cleaner/_kernels.pyi``,
``registry/_columns.pyi``) give every object they read through the buffer protocol."""

from typing import TypeAlias

import numpy as np
from typing_extensions import Buffer

# Any object with the buffer protocol.  numpy's stubs give ndarray ``__buffer__`` only for
# Python >= 3.12 (where collections.abc.Buffer exists), so on 3.11 it is named as well.
BufferLike: TypeAlias = Buffer | np.ndarray
