from ._session import connect
