//! Params and answer schemas of the methods the simulator serves, after the 3.15.1 source
//! (`packages/shared/src/zcode-protocol/index.ts`, `zcode-protocol-legacy-types.ts`,
//! `zcode-protocol-v4/transport.ts`, `command.ts`). Legacy params are `.strict()`: an unknown
//! key is a `-32602`. V4 command envelopes and payloads are plain `z.object`s: unknown keys
//! are dropped. Per-release differences come from the profile.

use serde_json::Value;

use super::profile::AppServerProfile;
use super::zod::{
    Schema, array, custom, enumeration, field, literal, loose, non_empty, nonnegative_int,
    optional, positive_int, record, strict, string,
};
use crate::v4::commands::COMMAND_TYPES;

pub const DELIVERY_KINDS: [&str; 2] = ["desktop-continuous", "web-remote-replayable"];

pub fn workspace_ref() -> Schema {
    strict(vec![
        field("workspacePath", non_empty()),
        optional("workspaceIdentity", non_empty()),
        optional("remoteSessionId", non_empty()),
        field("workspaceKey", non_empty()),
    ])
}

pub fn model_selection() -> Schema {
    strict(vec![
        field("providerId", non_empty()),
        field("modelId", non_empty()),
        optional("options", strict(vec![optional("reasoningLevel", non_empty())])),
    ])
}

fn mcp_entry() -> Schema {
    strict(vec![field("name", non_empty()), field("value", string())])
}

fn mcp_server() -> Schema {
    let shared = || {
        vec![
            optional("isolation", enumeration(&["session", "workspace"])),
            optional("protocolVersion", enumeration(&["legacy", "auto", "2026-07-28"])),
            optional("timeoutMs", positive_int()),
        ]
    };
    let mut stdio = vec![
        field("name", non_empty()),
        field("command", non_empty()),
        field("args", array(string())),
        field("env", array(mcp_entry())),
    ];
    stdio.extend(shared());
    let mut remote = vec![
        field("name", non_empty()),
        field("type", enumeration(&["http", "sse"])),
        field("url", non_empty()),
        field("headers", array(mcp_entry())),
        optional("oauth", Schema::Unknown),
    ];
    remote.extend(shared());
    Schema::Union(vec![strict(stdio), strict(remote)])
}

fn names() -> Schema {
    array(non_empty())
}

fn session_id_only() -> Vec<super::zod::Field> {
    vec![field("sessionId", non_empty())]
}

const DYNAMIC_WORKFLOW_MODES: [&str; 2] = ["alwaysOn", "onDemand"];

pub fn session_create(profile: &AppServerProfile) -> Schema {
    strict(vec![
        optional("sessionId", non_empty()),
        field("workspace", workspace_ref()),
        optional("parentSessionId", non_empty()),
        optional("mode", enumeration(profile.session_modes())),
        optional("model", model_selection()),
        optional("persistence", enumeration(&["immediate", "deferred"])),
        optional("thoughtLevel", non_empty()),
        optional("titleGenerationEnabled", Schema::Bool),
        optional("mcpServers", array(mcp_server())),
        optional("toolAllowlist", names()),
        optional("toolDenylist", names()),
        optional("importedHistory", Schema::Unknown),
        optional("offPeakToolEnabled", Schema::Bool),
        optional("dynamicWorkflowEnabled", Schema::Bool),
        optional("dynamicWorkflowMode", enumeration(&DYNAMIC_WORKFLOW_MODES)),
    ])
}

/// 3.15 added the thought level, tool lists and workflow flags. `workspace` is optional on
/// 0.16.x too: `session/resume {sessionId}` alone resumed on a live CLI 0.16.5 ("ZCode
/// Protocol v1 (app-server stdio): live verification record", Desktop 3.12.3, issue 25 [B]),
/// and the 0.16.x bundle's schema lists `workspace?` ("ZCode app-server Session Protocol"
/// probe log, §3.1, issue 25 [A]).
pub fn session_resume(profile: &AppServerProfile) -> Schema {
    if !profile.has_315_deltas() {
        return strict(vec![
            field("sessionId", non_empty()),
            optional("workspace", workspace_ref()),
            optional("mcpServers", array(mcp_server())),
        ]);
    }
    strict(vec![
        field("sessionId", non_empty()),
        optional("workspace", workspace_ref()),
        optional("thoughtLevel", non_empty()),
        optional("mcpServers", array(mcp_server())),
        optional("toolAllowlist", names()),
        optional("toolDenylist", names()),
        optional("offPeakToolEnabled", Schema::Bool),
        optional("dynamicWorkflowEnabled", Schema::Bool),
        optional("dynamicWorkflowMode", enumeration(&DYNAMIC_WORKFLOW_MODES)),
    ])
}

/// 3.15 added `sessionIds`; CLI 0.17.0 dropped `includeArchived` (releases §3.1).
pub fn session_list(profile: &AppServerProfile) -> Schema {
    let mut fields = vec![optional("workspace", workspace_ref())];
    if profile.has_315_deltas() {
        fields.push(optional(
            "sessionIds",
            Schema::Array { item: Box::new(non_empty()), min: 1, max: Some(64) },
        ));
    }
    if profile.list_accepts_include_archived() {
        fields.push(optional("includeArchived", Schema::Bool));
    }
    fields.push(optional("limit", positive_int()));
    strict(fields)
}

pub fn session_read() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        optional("deliveryKind", enumeration(&DELIVERY_KINDS)),
        optional("messageLimit", positive_int()),
        optional("afterSeq", nonnegative_int()),
        optional("contentProfile", enumeration(&["full", "index"])),
    ])
}

pub fn session_messages() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        optional("afterMessageId", non_empty()),
        optional("limit", positive_int()),
    ])
}

pub fn session_events() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        optional("afterSeq", nonnegative_int()),
        optional("limit", positive_int()),
    ])
}

pub fn session_subscribe() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        field("deliveryKind", enumeration(&DELIVERY_KINDS)),
        optional("afterSeq", nonnegative_int()),
        optional("includeSnapshot", Schema::Bool),
    ])
}

pub fn session_send() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        optional("modelSelection", model_selection()),
        optional("modelExecution", Schema::Unknown),
        optional("inputId", non_empty()),
        optional("queryId", non_empty()),
        field("content", string()),
        optional("attachments", array(record(Schema::Unknown))),
        optional("browserAmbientContext", Schema::Unknown),
        optional("expectedRevision", nonnegative_int()),
        optional("expectedProviderRevision", non_empty()),
        optional("automationId", non_empty()),
        optional("offPeakTaskId", non_empty()),
        optional("offPeakRunType", enumeration(&["init", "resume"])),
        optional("botDeliveryTarget", Schema::Unknown),
        optional("toolDenylist", names()),
    ])
}

/// `session/send`'s `superRefine` rules.
pub fn session_send_refinements(params: &Value) -> Vec<Value> {
    let mut issues = Vec::new();
    let has = |key: &str| params.get(key).is_some_and(|value| !value.is_null());
    if has("automationId") && has("offPeakTaskId") {
        issues.push(custom(&[], "automationId and offPeakTaskId are mutually exclusive"));
    }
    if has("offPeakRunType") && !has("offPeakTaskId") {
        issues.push(custom(&["offPeakRunType"], "offPeakRunType requires offPeakTaskId"));
    }
    if has("modelExecution") && !has("modelSelection") {
        issues.push(custom(&["modelExecution"], "modelExecution requires modelSelection"));
    }
    issues
}

pub fn session_id() -> Schema {
    strict(session_id_only())
}

pub fn session_close(profile: &AppServerProfile) -> Schema {
    let mut fields = session_id_only();
    if profile.has_315_deltas() {
        fields.push(optional("expectedPersistence", enumeration(&["immediate", "deferred"])));
    }
    strict(fields)
}

pub fn session_set_mode(profile: &AppServerProfile) -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        field("mode", enumeration(profile.session_modes())),
        optional("expectedRevision", nonnegative_int()),
    ])
}

pub fn session_set_model() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        field("model", model_selection()),
        optional("expectedRevision", nonnegative_int()),
        optional("persistAsWorkspaceLastUsed", Schema::Bool),
    ])
}

pub fn session_set_thought_level() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        optional("thoughtLevel", non_empty()),
        optional("expectedRevision", nonnegative_int()),
        optional("persistAsWorkspaceLastUsed", Schema::Bool),
    ])
}

pub fn session_subagents() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        optional("endedCursor", non_empty()),
        optional("endedLimit", positive_int()),
    ])
}

pub fn session_fork() -> Schema {
    let target = Schema::Union(vec![
        strict(vec![field("kind", literal("turn".into())), field("turnIndex", nonnegative_int())]),
        strict(vec![field("kind", literal("message".into())), field("messageId", non_empty())]),
        strict(vec![
            field("kind", literal("checkpoint".into())),
            field("checkpointId", non_empty()),
        ]),
        strict(vec![field("kind", literal("latestCheckpoint".into()))]),
    ]);
    strict(vec![
        field("sessionId", non_empty()),
        optional("target", target),
        optional("expectedRevision", nonnegative_int()),
    ])
}

pub fn session_compact() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        optional("inputId", non_empty()),
        optional("instructions", string()),
        optional("expectedRevision", nonnegative_int()),
    ])
}

pub fn session_goal() -> Schema {
    strict(vec![
        field("sessionId", non_empty()),
        optional("inputId", non_empty()),
        field("action", enumeration(&["show", "set", "replace", "pause", "resume", "clear"])),
        optional("objective", string()),
        optional("expectedRevision", nonnegative_int()),
    ])
}

pub fn session_cancel_background_task() -> Schema {
    strict(vec![field("sessionId", non_empty()), field("taskId", non_empty())])
}

pub fn provider_update_account_config() -> Schema {
    let state = strict(vec![
        field("availability", enumeration(&["available", "pending", "unavailable", "unknown"])),
        field("entitled", Schema::Bool),
        optional("unavailableReason", Schema::Unknown),
        optional("current", Schema::Bool),
        optional("connectionKey", string()),
        optional("effectiveAt", Schema::Number),
    ]);
    strict(vec![
        field("revision", non_empty()),
        field("basedOnZCodeBuiltinRevision", non_empty()),
        field("providers", record(Schema::Unknown)),
        field("states", record(state)),
    ])
}

pub fn workspace_only() -> Schema {
    strict(vec![field("workspace", workspace_ref())])
}

pub fn workspace_update_interaction_preferences() -> Schema {
    strict(vec![
        field("workspace", workspace_ref()),
        field(
            "preferences",
            strict(vec![field("askUserQuestionAutoResolutionEnabled", Schema::Bool)]),
        ),
    ])
}

// ── answers to the Agent's reverse requests ──

pub fn runtime_preferences_result() -> Schema {
    strict(vec![
        field("nativeSearchEnhancementsEnabled", Schema::Bool),
        optional("subagentRuntimeConfigEnabled", Schema::Bool),
        optional("memoryEnabled", Schema::Bool),
        optional("askUserQuestionAutoResolutionEnabled", Schema::Bool),
        optional("integratedTerminalShell", Schema::Unknown),
        optional("modelContextBudgetStrategy", enumeration(&["legacy", "preflight-v1"])),
    ])
}

pub fn permission_response() -> Schema {
    let rule = strict(vec![field("toolName", non_empty()), optional("ruleContent", string())]);
    let update = strict(vec![
        field("type", literal("addRules".into())),
        field("behavior", enumeration(&["allow", "deny", "ask"])),
        field("rules", Schema::Array { item: Box::new(rule), min: 1, max: None }),
    ]);
    strict(vec![
        field("decision", enumeration(&["allow", "deny", "escalate", "modify"])),
        optional("reason", string()),
        optional("modifiedInput", Schema::Unknown),
        optional("permissionUpdates", array(update)),
    ])
}

pub fn user_input_response() -> Schema {
    strict(vec![
        field("action", enumeration(&["accept", "decline", "cancel"])),
        optional("content", record(Schema::Unknown)),
        optional("reason", string()),
    ])
}

pub fn provider_headers_response() -> Schema {
    Schema::Union(vec![
        strict(vec![
            field("headersApplied", literal(true.into())),
            field(
                "requestAuth",
                strict(vec![
                    optional("apiKey", non_empty()),
                    optional("apiKeyId", non_empty()),
                    optional("accountScope", string()),
                    optional("headers", record(non_empty())),
                ]),
            ),
            optional("errorMessage", non_empty()),
        ]),
        strict(vec![
            field("headersApplied", literal(false.into())),
            optional("errorMessage", non_empty()),
        ]),
    ])
}

pub fn official_mcp_auth_response() -> Schema {
    Schema::Union(vec![
        strict(vec![field("ok", literal(true.into())), field("headers", record(string()))]),
        strict(vec![field("ok", literal(false.into())), field("reason", non_empty())]),
    ])
}

/// Answers whose schemas live in files the public index does not hold (browser-use,
/// automation): any object is accepted.
pub fn any_object() -> Schema {
    loose(vec![])
}

// ── V4 ──

pub fn v4_connection_flow() -> Schema {
    strict(vec![
        field("connectionId", Schema::Str { min: 1, trim: false }),
        field("state", enumeration(&["saturated", "drained", "closed"])),
    ])
}

pub fn v4_subscribe() -> Schema {
    strict(vec![
        field("topic", string()),
        optional("base", loose(vec![field("logEpoch", string()), field("seq", Schema::Number)])),
        optional("visibility", enumeration(&["foreground", "background"])),
        field("connectionId", string()),
        field("clientMode", enumeration(&DELIVERY_KINDS)),
        optional("workspace", workspace_ref()),
        optional("legacyTaskIds", array(non_empty())),
        optional("resumeThoughtLevel", non_empty()),
        optional("workflowRunDeltas", Schema::Bool),
    ])
}

pub fn v4_resync() -> Schema {
    strict(vec![
        field("subscriptionId", non_empty()),
        field(
            "base",
            Schema::Nullable(Box::new(strict(vec![
                field("logEpoch", non_empty()),
                field("seq", nonnegative_int()),
            ]))),
        ),
        optional("forceSnapshot", Schema::Bool),
        field("topic", non_empty()),
        field("connectionId", non_empty()),
    ])
}

pub fn v4_unsubscribe() -> Schema {
    strict(vec![
        field("topic", non_empty()),
        field("subscriptionId", non_empty()),
        field("connectionId", non_empty()),
    ])
}

/// Not `.strict()` in the source: extra keys are dropped.
pub fn v4_rows_range() -> Schema {
    loose(vec![
        field("sessionId", string()),
        optional("clientMode", enumeration(&DELIVERY_KINDS)),
        optional("beforeRowId", Schema::Number),
        field("limit", Schema::Number),
    ])
}

pub fn v4_conversation_usage() -> Schema {
    strict(vec![field("sessionId", Schema::Str { min: 1, trim: false })])
}

pub fn v4_command_envelope() -> Schema {
    let types: Vec<&'static str> = COMMAND_TYPES.to_vec();
    loose(vec![
        optional("ttft", Schema::Unknown),
        field("commandId", string()),
        field("clientId", string()),
        field("sessionId", Schema::Nullable(Box::new(string()))),
        optional("baseRevision", Schema::Number),
        optional("baseLogEpoch", non_empty()),
        field("type", Schema::Enum(types)),
        optional("payload", Schema::Unknown),
        field("issuedAt", Schema::Number),
    ])
}

/// The payload schema of a command the simulator executes; any object for the others.
pub fn v4_command_payload(kind: &str, profile: &AppServerProfile) -> Schema {
    match kind {
        "sendText" => loose(vec![
            field("text", string()),
            optional("attachments", array(Schema::Unknown)),
            optional("requestedDelivery", enumeration(&["startNow", "queue", "guide"])),
            optional("modelSelection", model_selection()),
            optional("mode", Schema::Unknown),
            optional("planEnabled", Schema::Bool),
            optional("modelExecution", Schema::Unknown),
            optional(
                "heldQueueDisposition",
                enumeration(&["clearQueueAndSend", "keepQueueAndSend"]),
            ),
            optional("toolDisallowlist", array(Schema::Str { min: 1, trim: false })),
        ]),
        "stop" => loose(vec![optional(
            "expectedForegroundExecutionId",
            Schema::Str { min: 1, trim: false },
        )]),
        "resolveInteraction" => loose(vec![
            field("interactionId", string()),
            field(
                "answer",
                loose(vec![
                    optional("optionId", string()),
                    optional("freeText", string()),
                    optional("action", enumeration(&["accept", "decline", "cancel"])),
                    optional("content", record(Schema::Unknown)),
                ]),
            ),
        ]),
        "snoozeInteractionAutoResolution" => loose(vec![field("interactionId", string())]),
        "switchModelConfig" => loose(vec![
            field("provider", string()),
            field("model", string()),
            field("thought", string()),
        ]),
        "switchCollaborationMode" => {
            loose(vec![field("mode", enumeration(profile.collaboration_modes()))])
        }
        "setFollowupMode" => loose(vec![field("mode", enumeration(&["queue", "guide"]))]),
        "setAutoDrain" => loose(vec![field("autoDrain", Schema::Bool)]),
        "deleteQueueItem" | "sendQueuedNow" => loose(vec![field("queueItemId", string())]),
        "editQueueItem" => loose(vec![field("queueItemId", string()), field("newText", string())]),
        "cancelBackgroundWork" => loose(vec![field("workId", string())]),
        "renameSession" => loose(vec![field("title", string())]),
        _ => loose(vec![]),
    }
}
