"""Claim names and vocabularies of LTI 1.3 core, Deep Linking 2.0, AGS 2.0 and NRPS 2.0."""

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
MESSAGE_TYPE = LTI + "message_type"
VERSION = LTI + "version"
DEPLOYMENT_ID = LTI + "deployment_id"
TARGET_LINK_URI = LTI + "target_link_uri"
RESOURCE_LINK = LTI + "resource_link"
ROLES = LTI + "roles"
CONTEXT = LTI + "context"
CUSTOM = LTI + "custom"
LAUNCH_PRESENTATION = LTI + "launch_presentation"
TOOL_PLATFORM = LTI + "tool_platform"

DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
DL_CONTENT_ITEMS = "https://purl.imsglobal.org/spec/lti-dl/claim/content_items"
DL_DATA = "https://purl.imsglobal.org/spec/lti-dl/claim/data"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"

RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
DEEP_LINKING_REQUEST = "LtiDeepLinkingRequest"
DEEP_LINKING_RESPONSE = "LtiDeepLinkingResponse"
LTI_VERSION = "1.3.0"

# The tag of the line items the tool creates (deep linking, or lookup when a launch names none).

SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_LINEITEM_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCOPE_RESULT_READONLY = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_NRPS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
TOOL_SCOPES = [
    SCOPE_LINEITEM,
    SCOPE_LINEITEM_READONLY,
    SCOPE_RESULT_READONLY,
    SCOPE_SCORE,
    SCOPE_NRPS,
]

# Context roles that make a member staff of the course (LTI core §A.2.2). A sub-role
# such as membership/Instructor#TeachingAssistant counts by its principal role, Instructor.
STAFF_ROLE_NAMES = {"Instructor", "TeachingAssistant", "ContentDeveloper", "Administrator"}
# membership#Instructor names a principal role; membership/Instructor#Lecturer a sub-role.
PRINCIPAL_CONTEXT_ROLE_PREFIX = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
SUB_CONTEXT_ROLE_PREFIX = "http://purl.imsglobal.org/vocab/lis/v2/membership/"
