"""Read models: plain data built from the store, shared by the API, the status page and the
CLI (which never imports the API). Kept free of Starlette and of anything heavy at import time,
so ``canary status`` starts fast."""
