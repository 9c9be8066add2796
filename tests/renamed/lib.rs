//! Nothing here: `tests/` holds code written for `parcode` 0.6.1, compiled
//! against binfmt-parcode under the name `parcode`.
