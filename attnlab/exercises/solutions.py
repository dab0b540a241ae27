"""Reference solutions of every exercise, written the way a learner would write them.

``attnlab.solution(id)`` shows a function's source, so each one is short, plain NumPy
with no input checking; each function's name is its exercise's id. The checkers
compare answers with the validated functions of ``attnlab``; the tests check that
these pass too. Exercises by lesson:

- 00_start_here: scale_factor, output_shape
- 01_dot_product: best_key, new_token_scores, score_matrix
- 02_variance: scaled_scores, std_512, uniform_divisor, var_pytorch
- 03_scaling: temperature_for_entropy, largest_jacobian_entry
- 04_softmax: softmax, softmax_jacobian, masked_softmax, qk_norm_scores
- 05_values: attention, output_change, scores_for, attention_by_hand, masked_attention
- 06_heads_and_masks: multi_head_attention, grouped_query_attention, kv_cache_bytes,
  padding_causal_mask
- 07_cost_and_tiling: longest_sequence, merge_states, online_softmax
- 08_does_scaling_matter: softmax_backward, attention_grad_q, predicted_move,
  unscaled_as_scaled
- 09_attention_family: alibi_biases, rope, reach
- 10_in_practice: linear_attention, linear_attention_step, causal_lower_right,
  sdpa_weights
"""

import math

import numpy as np

import attnlab


def scale_factor(d_k):
    return 1 / np.sqrt(d_k)  # the scores are multiplied by this: divided by √d_k


def output_shape(n_q, n_k, d_k, d_v):
    # Q Kᵀ: (n_q, d_k) @ (d_k, n_k) -> (n_q, n_k); softmax keeps it; @ V (n_k, d_v) -> (n_q, d_v)
    return (n_q, d_v)


def best_key(q, length):
    # q·k = ‖q‖ ‖k‖ cos θ, and ‖k‖ = length is fixed: the largest score needs cos θ = 1,
    # a key pointing exactly the way q does.
    direction = q / np.linalg.norm(q)  # along q, length 1
    return length * direction


def new_token_scores(x_new, K_cache, W_Q, W_K):
    q = x_new @ W_Q  # the new token's query: (d_k,)
    k_new = x_new @ W_K  # its own key, made the same way as the cached ones: (d_k,)
    K = np.vstack([K_cache, k_new])  # every key so far, its own last: (n + 1, d_k)
    return K @ q  # one score per key: (n + 1,)


def score_matrix(W_Q, W_K):
    # S = (X W_Q)(X W_K)ᵀ = X W_Q W_Kᵀ Xᵀ, since (A B)ᵀ = Bᵀ Aᵀ
    return W_Q @ W_K.T


def scaled_scores(Q, K):
    d_k = Q.shape[-1]
    # Divides the variance σ_q²σ_k²·d_k by d_k: 1 for unit-variance entries.
    return Q @ K.T / np.sqrt(d_k)


def std_512():
    d_k = 512
    # q·k₁ − q·k₂ = q·(k₁ − k₂) = Σ_i q_i (k₁ᵢ − k₂ᵢ). An entry of k₁ − k₂ has mean 0 and
    # E[(k₁ᵢ − k₂ᵢ)²] = 1 + 1 = 2 (k₁ and k₂ are independent), and it is independent of q_i,
    # so each term has variance E[q_i²] · 2 = 2 (Section 2), and the d_k terms add (Section 3):
    variance = 1 * 2 * d_k  # = 1024, twice the variance 512 of one score
    answer_std_512 = np.sqrt(variance)  # the standard deviation is the square root: 32
    return answer_std_512


def uniform_divisor(d_k):
    sigma = np.sqrt(2**2 / 12)  # uniform on [-1, 1]: width w = 2, variance w²/12 = 1/3
    # Var(q·k) = σ_q² σ_k² d_k, and dividing by c divides it by c²: c is its square root
    return sigma * sigma * np.sqrt(d_k)


def var_pytorch():
    d_model = 768
    fan_in, fan_out = d_model, 3 * d_model  # in_proj_weight stacks W_Q, W_K, W_V: (3·768, 768)
    a = np.sqrt(6 / (fan_in + fan_out))  # Xavier-uniform: U(-a, a)
    var_w = (2 * a) ** 2 / 12  # width w = 2a, variance w²/12 = a²/3 = 1/1536
    # q_i = Σ_j x_j W_ji is a dot product of d_model terms of variance 1 · var_w (Section 7)
    var_q = d_model * 1 * var_w  # σ_q² = 1/2, and the same σ_k² for an entry of k
    # Var(q·k / √d_k) = σ_q² σ_k² (Section 7)
    answer_var_pytorch = var_q * var_q  # 1/4
    return answer_var_pytorch


def largest_jacobian_entry(p):
    # |J_ij| = p_i p_j <= p_i (1 - p_i) = J_ii off the diagonal, since p_j <= 1 - p_i; and
    # x (1 - x) rises up to x = 1/2, where at most one weight can be: the top weight wins.
    p_max = p.max(axis=-1)  # one top weight per row, shape p.shape[:-1]
    return p_max * (1 - p_max)


def temperature_for_entropy(scores, target):
    low, high = 1.0, 1.0  # entropy rises with τ: grow until they bracket the target, then halve
    while attnlab.entropy(attnlab.softmax(scores / high)) < target:
        high *= 10  # still too sharp
    while attnlab.entropy(attnlab.softmax(scores / low)) > target:
        low /= 10  # still too flat
    for _ in range(100):
        tau = np.sqrt(low * high)  # the middle of the interval on a log scale
        if attnlab.entropy(attnlab.softmax(scores / tau)) < target:  # one row, one number
            low = tau  # too sharp: the answer is a larger τ
        else:
            high = tau
    return np.sqrt(low * high)


def softmax(x):
    z = x - x.max(axis=-1, keepdims=True)  # every exponent <= 0, so exp can't overflow
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_jacobian(P):
    eye = np.eye(P.shape[-1])  # δ_ij, (m, m)
    # [r, i, j] = p_i (δ_ij - p_j) of row r: P[:, :, None] runs down i, P[:, None, :] along j
    return P[:, :, None] * (eye - P[:, None, :])  # (n, m, 1) * (n, m, m) -> (n, m, m)


def masked_softmax(x, mask):
    kept = np.where(mask, x, -np.inf)  # blocked keys: exp(-inf) = 0 exactly
    m = kept.max(axis=-1, keepdims=True)  # each row's maximum over its kept keys only
    m = np.where(m > -np.inf, m, 0.0)  # a row with no key left: shift by 0, not -inf
    e = np.exp(kept - m)  # every exponent <= 0; -inf - 0 = -inf gives 0
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total > 0, total, 1.0)  # a row with no key left: 0 / 1 = 0, not 0 / 0


def qk_norm_scores(Q, K, g):
    Qn = Q / np.linalg.norm(Q, axis=-1, keepdims=True)  # every query of length 1
    Kn = K / np.linalg.norm(K, axis=-1, keepdims=True)  # every key of length 1
    return g * Qn @ Kn.T  # S[i, j] = g cos θ_ij, in [-g, g]


def attention(Q, K, V):
    d_k = Q.shape[-1]
    weights = softmax(Q @ K.T / np.sqrt(d_k))  # (n_q, n_k), each row sums to 1
    return weights @ V  # (n_q, d_v)


def output_change(A, j, delta):
    # Z = A V: row i is sum_k A[i, k] v_k, and only v_j changes, so row i moves by A[i, j] delta
    return np.outer(A[:, j], delta)  # (n_q,) column of A times (d_v,) change: (n_q, d_v)


def scores_for(V, z):
    # The weights w mix the rows into z, sum_j w_j v_j = z, and sum to 1: one more equation.
    system = np.vstack([V.T, np.ones(len(V))])  # (d_v + 1, n): one row per equation
    w = np.linalg.solve(system, np.append(z, 1.0))  # z inside the hull: every w_j > 0
    return np.log(w)  # softmax(log w) = w / sum(w) = w; any constant added changes nothing


def attention_by_hand():
    q = np.array([1, 1, 1, 1])
    K = np.array([[1, 1, 1, -1], [0, 1, -1, -1], [-1, -1, 0, 0]])
    V = np.array([[1, 0], [4, 2], [8, 1]])
    scores = K @ q / np.sqrt(4)  # 2, -1, -2 divided by √d_k = 2: 1, -0.5, -1
    weights = np.exp(scores) / np.exp(scores).sum()  # e¹, e⁻⁰·⁵, e⁻¹ over their sum
    return weights @ V[:, 0]  # the first entry of the output: the values' first entries mixed


def masked_attention(Q, K, V, mask):
    d_k = Q.shape[-1]
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # swap only the last two axes of K
    S = np.where(mask, S, -np.inf)  # blocked keys get exp(-inf) = 0 weight
    return softmax(S) @ V


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads):
    d_head = W_Q.shape[1] // n_heads
    heads = []
    for h in range(n_heads):
        cols = slice(h * d_head, (h + 1) * d_head)  # head h owns this block of columns
        Q, K, V = X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols]  # each (n, d_head)
        heads.append(attention(Q, K, V))  # scaled by √d_head, the width of one head
    return np.concatenate(heads, axis=-1) @ W_O  # heads side by side: (n, d_model)


def grouped_query_attention(Q, K, V):
    group = Q.shape[-3] // K.shape[-3]  # query heads per key/value head
    # repeat, not tile: the copies of head 0 come first, then those of head 1, ..., so
    # each run of `group` neighbouring query heads reads the same key/value head.
    K = np.repeat(K, group, axis=-3)  # (..., H_kv, n_k, d_k) -> (..., H, n_k, d_k)
    V = np.repeat(V, group, axis=-3)
    return attnlab.attention(Q, K, V)  # now H heads each; attends over the leading axes


def kv_cache_bytes(n_layers, n_tokens, n_heads, n_kv_heads, d_head, bytes_per_number):
    # n_heads plays no part: queries are not cached, and query heads share the KV heads.
    numbers_per_token = 2 * n_kv_heads * d_head  # one key and one value vector per KV head
    return n_layers * n_tokens * numbers_per_token * bytes_per_number  # every layer has its own


def padding_causal_mask(lengths, n):
    j = np.arange(n)  # key positions
    real_key = j[None, :] < lengths[:, None]  # (batch, n): key j is a real token
    not_future = j[None, :] <= j[:, None]  # (n, n): key j is not after query i
    return real_key[:, None, :] & not_future  # (batch, 1, n) & (n, n) -> (batch, n, n)


def longest_sequence(memory_bytes, d, bytes_per_number):
    numbers = memory_bytes // bytes_per_number  # whole numbers that fit in the budget
    # 2n² + 4nd ≤ numbers  <=>  (n + d)² ≤ numbers / 2 + d²  (complete the square);
    # math.isqrt is the exact integer square root, rounded down, for any size.
    return math.isqrt(numbers // 2 + d * d) - d


def merge_states(m1, l1, o1, m2, l2, o2):
    m = max(m1, m2)  # the largest score of both parts
    # each part's sums were taken against its own maximum: e^(s - m_i) · e^(m_i - m) = e^(s - m)
    a, b = np.exp(m1 - m), np.exp(m2 - m)
    return m, l1 * a + l2 * b, o1 * a + o2 * b  # l and o rescaled by the same factors


def online_softmax(scores, block_size):
    m = -np.inf  # the largest score seen so far
    l = 0.0  # the sum of exp(s - m) over the scores seen so far
    for start in range(0, len(scores), block_size):
        block = scores[start : start + block_size]
        m_new = max(m, block.max())
        l = l * np.exp(m - m_new) + np.exp(block - m_new).sum()  # old terms rescaled to m_new
        m = m_new
    return np.exp(scores - m) / l


def softmax_backward(p, grad_p):
    dot = (grad_p * p).sum(axis=-1, keepdims=True)  # Σ_j g_j p_j: one number per row
    return p * (grad_p - dot)


def attention_grad_q(Q, K, V, grad_O, scale):
    P = softmax(scale * Q @ K.T)  # the forward pass's weights, (n_q, n_k)
    grad_P = grad_O @ V.T  # O = P V is a linear layer in P with weights V
    grad_S = softmax_backward(P, grad_P)  # back through each row's softmax
    return scale * grad_S @ K  # S = scale · Q Kᵀ is a linear layer in Q with weights scale · Kᵀ


def predicted_move(d_k, scaled_16, unscaled_16):
    growth = d_k / 16  # how many times d_k = 16 the new d_k is
    # Adam moves all d_k terms of a score's change one way: it grows like d_k, ÷√d_k keeps √d_k
    return scaled_16 * growth**0.5, unscaled_16 * growth  # ÷√d_k, then ÷1


def unscaled_as_scaled(d_k):
    c = d_k**0.25  # W_Q c and W_K c give scores c · c = √d_k times larger: ÷√d_k takes it back
    # Adam's step ignores the gradient's size, so a matrix c times larger needs c times the lr
    return c, c, c  # factors on W_Q, on W_K, and on their learning rate


def alibi_biases(n, H):
    # m_h = 2^(-8h/H) counts the heads from 1, so h runs 1 … H for Python's heads 0 … H - 1
    slopes = 2.0 ** (-8 * np.arange(1, H + 1) / H)  # (H,), the steepest head first
    i = np.arange(n)
    distance = np.abs(i[:, None] - i[None, :])  # (n, n): queries down, keys across
    # (H, 1, 1) times (n, n) broadcasts to (H, n, n): each head's slope times every distance
    return -slopes[:, None, None] * distance


def rope(X, start=0):
    n, d = X.shape
    theta = 10000.0 ** (-2 * np.arange(d // 2) / d)  # θ_f, what lesson.rope_angles(d) gives
    angles = (start + np.arange(n))[:, None] * theta[None, :]  # (n, d/2): row i at start + i
    x, y = X[:, 0::2], X[:, 1::2]  # the two features of every pair, (n, d/2) each
    out = np.empty_like(X, dtype=float)
    # both new features from the old x and y, so neither may be overwritten first
    out[:, 0::2] = x * np.cos(angles) - y * np.sin(angles)
    out[:, 1::2] = x * np.sin(angles) + y * np.cos(angles)
    return out


def reach(M, L):
    # One layer carries information along one allowed pair, key j -> query i; L layers along
    # a path of L pairs. (M^L)[i, j] counts those paths: key j has reached query i if > 0.
    step = M.astype(int)
    paths = step
    for _ in range(L - 1):
        # back to 0/1 after every product: left as counts, the paths multiply with every
        # layer and soon overflow the integers, which wrap around silently
        paths = (paths @ step > 0).astype(int)
    return paths > 0


def causal_lower_right(n_q, n_k):
    i = np.arange(n_q)[:, None]  # the new queries are the last n_q of the n_k tokens
    j = np.arange(n_k)[None, :]
    return j <= i + (n_k - n_q)  # query i is token n_k - n_q + i: it sees keys up to itself


def linear_attention(Q, K, V):
    def phi(x):  # elu(x) + 1: x + 1 for x > 0, e^x otherwise; always positive
        return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))

    phi_q, phi_k = phi(Q), phi(K)
    summary = phi_k.T @ V  # (d_k, d_v): every key and value at once, no n × n matrix
    normaliser = phi_q @ phi_k.sum(axis=0)  # (n_q,): phi(q_i) · Σ_j phi(k_j)
    return (phi_q @ summary) / normaliser[:, None]


def linear_attention_step(S, z, q, k, v):
    def phi(x):  # elu(x) + 1, as in linear_attention
        return np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))

    S = S + np.outer(phi(k), v)  # (d_k, d_v): add token i first, as query i may see key i
    z = z + phi(k)  # (d_k,): new arrays, so the caller's S and z stay as they were
    return S, z, phi(q) @ S / (phi(q) @ z)


def sdpa_weights(q, k, attn_mask=None, is_causal=False, scale=None):
    if scale is None:
        scale = 1 / np.sqrt(q.shape[-1])  # PyTorch's default: divide by √d_k
    S = q @ np.swapaxes(k, -1, -2) * scale  # (..., n_q, n_k): swap only the last two axes
    if is_causal:  # top left: query i sees the keys j <= i, also when n_q != n_k
        attn_mask = np.tril(np.ones(S.shape[-2:], dtype=bool))
    if attn_mask is not None and attn_mask.dtype == bool:
        S = np.where(attn_mask, S, -np.inf)  # True = may attend; False gets weight 0
    elif attn_mask is not None:
        S = S + attn_mask  # a float mask is added to the scaled scores
    return attnlab.softmax(S)  # along the keys; a row with no key left gives zeros
