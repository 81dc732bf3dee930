// The response bodies of API.md as types, for end-to-end tests that read them (`api.get<Page>(…)`): the SDK's
// own types (libs/client), so the tests and the client users install read the same contract. The tests check the
// actual answers against it at runtime.

import type { Page as PageOf, RunInfo, SessionDetail, SessionInfo, TreeView } from '@canopy/client';
import type { Turn, TurnResultData } from '@canopy/core';

export type { SessionDetail, SessionInfo as Session, TreeView, Turn, TurnResultData as TurnResult };
export type Page = PageOf<SessionInfo>;
export type RunView = RunInfo;
